"""The ``[[counts]]`` tables and the ``[defaults]`` they fall back on.

A count's own ``interval``, ``stale_after_failures`` and ``stale_after_minutes`` win over
``[defaults]``; each is checked where it is written. The figures (``eligible``, ``received``) are
under the one ceiling, ``MAX_FIGURE``; the rule is checked by the domain's own
:class:`~bot.domain.model.Count` once every key of the table is good.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from fractions import Fraction
from typing import Annotated

from pydantic import AfterValidator, Field, PlainValidator, model_validator

from bot.domain.model import (
    CEILING_RULE,
    MAX_FIGURE,
    SLUG,
    Choice,
    Count,
    CountStatus,
    DecisionRule,
    RuleKind,
)
from bot.domain.schedule import (
    DEFAULT_REMIND,
    MAX_REMIND,
    MIN_REMIND,
    Schedule,
    ScheduleError,
    When,
    parse_when,
)
from bot.domain.times import zone_named
from bot.errors import ConfigError
from bot.ingest.sources.settings import ManualSettings, MappedSettings, SourceSettings
from bot.settings.values import (
    Flag,
    Loc,
    Table,
    Text,
    Whole,
    at_least,
    bad,
    between,
    describe,
    enum_of,
    problems,
)

MIN_INTERVAL = 1.0
MAX_INTERVAL = 86_400.0
DEFAULT_INTERVAL = 15.0
DEFAULT_FAILURES = 5
DEFAULT_STALE_MINUTES = 10.0
MAX_STALE_MINUTES = 10_080
"""A week: a source silent for longer than that is stale whatever the setting."""


MANUAL = ManualSettings()


@dataclass(frozen=True, slots=True)
class CountConfig:
    count: Count
    source: SourceSettings = MANUAL
    interval: float = DEFAULT_INTERVAL
    stale_after_failures: int = DEFAULT_FAILURES
    stale_after_seconds: float = DEFAULT_STALE_MINUTES * 60
    public: bool = False
    """Anyone may see it: other servers and workspaces may follow it, and it has a public page."""
    schedule: Schedule | None = None
    """``starts`` or ``resumes`` (and ``remind_before``): put in the store when it has none for
    the count and the time is still ahead (what chat scheduled is kept)."""


def _slug(value: str) -> str:
    if not SLUG.match(value):
        raise bad(
            f"{describe(value)} is not a lowercase slug like 'bessemer-2021' "
            "(letters, digits and dashes, at most 64)"
        )
    return value


def _figure(value: int) -> int:
    if value > MAX_FIGURE:
        raise bad(f"{value:,} is above the ceiling: {CEILING_RULE}")
    return value


def _choice(value: object) -> Choice:
    if isinstance(value, dict) and not set(value) - {"id", "label"}:
        choice_id, label = value.get("id"), value.get("label", value.get("id"))
        if isinstance(choice_id, str) and isinstance(label, str):
            return Choice(choice_id, label)
    raise bad('expected { id = "yes", label = "Yes" }')


def _threshold(value: object) -> Fraction:
    try:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ValueError(value)
        return Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise bad('expected a fraction like "2/3"') from None


def _zone(value: object) -> tzinfo:
    if not isinstance(value, str):
        raise bad(f"expected text, got {describe(value)}")
    try:
        return zone_named(value)
    except ValueError as exc:
        raise bad(str(exc)) from None


def _stale_minutes(value: object) -> float:
    n = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if n is None or not 0 < n <= MAX_STALE_MINUTES:
        raise bad(f"must be above 0 and at most {MAX_STALE_MINUTES}, got {describe(value)}")
    return n


def _when(value: object) -> str:
    if isinstance(value, datetime):  # a TOML date-time: 2021-04-09T09:00:00-05:00
        return value.isoformat()
    if not isinstance(value, str):
        raise bad(f"expected a time like 2021-04-09T09:00-05:00, got {describe(value)}")
    return value


Interval = Annotated[float, between(MIN_INTERVAL, MAX_INTERVAL, " seconds")]
RemindMinutes = Annotated[
    float, between(MIN_REMIND.total_seconds() / 60, MAX_REMIND.total_seconds() / 60, " minutes")
]
WhenText = Annotated[str, PlainValidator(_when)]
Failures = Annotated[int, at_least(1)]
StaleMinutes = Annotated[float, PlainValidator(_stale_minutes)]
Figure = Annotated[Whole, AfterValidator(_figure)]


class Defaults(Table):
    """``[defaults]``: what a count that does not say otherwise gets."""

    interval: Interval = DEFAULT_INTERVAL
    stale_after_failures: Failures = DEFAULT_FAILURES
    stale_after_minutes: StaleMinutes = DEFAULT_STALE_MINUTES
    timezone: Annotated[tzinfo, PlainValidator(_zone)] | None = None
    """Where times are shown that cannot be shown in each reader's own zone (the console), and
    the zone of a scheduled time written without one."""
    remind_before: RemindMinutes = DEFAULT_REMIND.total_seconds() / 60
    """Minutes before a scheduled start or restart that its reminder goes (``remind``)."""


class CountTable(Table):
    """One ``[[counts]]`` table."""

    id: Annotated[Text, AfterValidator(_slug)] = Field(examples=['id = "bessemer-2021"'])
    title: Text
    choices: list[Annotated[Choice, PlainValidator(_choice)]]
    rule: Annotated[RuleKind, enum_of(RuleKind, "rule")] = RuleKind.MAJORITY
    tie_holder: Text | None = None
    threshold: Annotated[Fraction, PlainValidator(_threshold)] | None = None
    eligible: Figure | None = None
    received: Figure | None = None
    status: Annotated[CountStatus, enum_of(CountStatus, "status")] = CountStatus.COUNTING
    interval: Interval | None = None
    stale_after_failures: Failures | None = None
    stale_after_minutes: StaleMinutes | None = None
    source: SourceSettings = ManualSettings()
    public: Flag = False
    pace: Flag = False
    """Say the pace of counting ("about 400 ballots an hour") while the race is open."""
    starts: WhenText | None = None
    """When the count starts (``bot.domain.schedule``): ``2021-04-08T13:00:00-05:00``."""
    resumes: WhenText | None = None
    """When the count's pause ends."""
    remind_before: RemindMinutes | None = None
    """Minutes before ``starts`` or ``resumes`` that its reminder goes."""

    def schedule(self, zone: tzinfo | None) -> Schedule | None:
        """Its ``starts`` or ``resumes``; ConfigError when it cannot be read."""
        given = [(k, v) for k, v in ((When.STARTS, self.starts), (When.RESUMES, self.resumes)) if v]
        if not given:
            return None
        where = f"count {self.id!r}"
        if len(given) > 1:
            raise ConfigError(f"{where}: give starts or resumes, not both")
        kind, text = given[0]
        try:
            at = parse_when(text, zone, None)
        except ScheduleError as exc:
            raise ConfigError(f"{where}: {kind}: {exc}") from None
        lead = None if self.remind_before is None else timedelta(minutes=self.remind_before)
        return Schedule(self.id, kind, at, lead)

    def count(self) -> Count:
        """The count the table describes (ConfigError: the rule cannot work with its choices)."""
        return Count(
            id=self.id,
            title=self.title,
            choices=tuple(self.choices),
            rule=DecisionRule(self.rule, self.tie_holder, self.threshold),
            eligible=self.eligible,
            received=self.received,
            status=self.status,
            public=self.public,
            pace=self.pace,
        )

    def config(self, defaults: Defaults) -> CountConfig:
        """The count, its source and its settings, ``[defaults]`` where it says nothing."""
        pick = defaults.model_copy(update=self.model_dump(exclude_none=True, include=_DEFAULTED))
        return CountConfig(
            self.count(),
            self.source,
            pick.interval,
            pick.stale_after_failures,
            pick.stale_after_minutes * 60,
            self.public,
            self.schedule(defaults.timezone),
        )

    @model_validator(mode="after")
    def _whole(self) -> CountTable:
        found: list[tuple[Loc, str]] = []
        eligible, received = self.eligible, self.received
        if eligible is not None and received is not None and received > eligible:
            said = f"{received:,} received is more than the {eligible:,} eligible voters"
            found.append((("received",), said))
        try:
            count = self.count()
        except ConfigError as exc:
            found.append(((), str(exc)))
        else:
            if isinstance(self.source, MappedSettings):
                found += [
                    (("source", *loc), text) for loc, text in self.source.unknown_choices(count)
                ]
        problems("count", found)
        return self


_DEFAULTED = {"interval", "stale_after_failures", "stale_after_minutes"}


def unique(counts: Sequence[CountTable]) -> Sequence[CountTable]:
    """Each count's ``id`` once."""
    seen: set[str] = set()
    found: list[tuple[Loc, str]] = []
    for i, table in enumerate(counts):
        if table.id in seen:
            found.append(((i, "id"), f"{table.id!r} is used twice"))
        seen.add(table.id)
    problems("counts", found)
    return counts
