"""The domain: counts, choices, decision rules and tallies.

These are plain frozen values with no I/O. Platform payloads (Discord, Slack) and store rows are
separate types that are converted to and from these at the edges.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from fractions import Fraction

from bot.domain.limits import MAX_CHOICE_ID, count_problem
from bot.domain.words import fraction_words
from bot.errors import ConfigError

SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
CHOICE_ID = re.compile(rf"^[a-z0-9][a-z0-9_-]{{0,{MAX_CHOICE_ID - 1}}}$")

OPERATOR = "operator"
"""The owner of the counts in the operator's configuration file (``Count.owner``); every other
owner is a tenant, written ``platform:place`` (``discord:81384788765712384``, ``console:local``)."""
OWNER = re.compile(r"^(operator|[a-z][a-z0-9_]{0,31}:[^\s]{1,128})$")

MAX_FIGURE = 10**12
"""The largest figure tallybot accepts: votes, void, challenged, received and eligible.

One trillion is far above any real count and far below what a BIGINT column holds (2**63 - 1),
so that no sum of figures can overflow the store. It is checked wherever a figure enters: the
command grammar, the push body, every source and the config. See ``figure_value``.
"""
MAX_FIGURE_DIGITS = len(str(MAX_FIGURE))
CEILING_RULE = f"figures are at most {MAX_FIGURE:,}"
"""What every error about a figure above the ceiling says."""


def figure_value(digits: str) -> int | None:
    """The figure written with the ASCII ``digits`` (already checked), or None above the ceiling.

    The length is checked before converting, so a string of thousands of digits costs nothing
    and never meets Python's own limit on ``int(str)``.

    >>> figure_value("1100"), figure_value("0001100"), figure_value("1" * 4301)
    (1100, 1100, None)
    """
    significant = digits.lstrip("0")
    if len(significant) > MAX_FIGURE_DIGITS:
        return None
    value = int(significant or "0")
    return value if value <= MAX_FIGURE else None


class RuleKind(StrEnum):
    """How a count is decided."""

    MAJORITY = "majority"
    """A choice needs more than half of the valid votes."""
    PLURALITY = "plurality"
    """The choice with the most valid votes wins."""
    THRESHOLD = "threshold"
    """A choice needs at least a set share (above one half) of the valid votes."""


class CountStatus(StrEnum):
    SCHEDULED = "scheduled"
    COUNTING = "counting"
    PAUSED = "paused"
    FINAL = "final"


class TallyState(StrEnum):
    COUNTING = "counting"
    PAUSED = "paused"
    FINAL = "final"


@dataclass(frozen=True, slots=True)
class Choice:
    id: str
    label: str


@dataclass(frozen=True, slots=True)
class DecisionRule:
    """The rule a count is decided by.

    ``tie_holder`` is the choice that prevails on a tie or when no choice meets the rule: in a
    union election ``no`` holds ties, because the union needs a majority to win. Under a majority
    rule with three or more choices there is no tie holder: no majority means a runoff.
    ``threshold`` is the share a choice needs under the threshold rule, e.g. ``Fraction(2, 3)``.
    """

    kind: RuleKind
    tie_holder: str | None = None
    threshold: Fraction | None = None

    def describe(self) -> str:
        if self.kind is RuleKind.MAJORITY:
            return "majority of valid votes"
        if self.kind is RuleKind.PLURALITY:
            return "most valid votes"
        assert self.threshold is not None
        return f"at least {fraction_words(self.threshold)} of valid votes"


@dataclass(frozen=True, slots=True)
class Count:
    """One contest being counted, e.g. the Bessemer 2021 union election."""

    id: str
    title: str
    choices: tuple[Choice, ...]
    rule: DecisionRule
    eligible: int | None = None
    received: int | None = None
    status: CountStatus = CountStatus.SCHEDULED
    owner: str = OPERATOR
    """Who the count belongs to: :data:`OPERATOR`, or the tenant it was created in."""
    public: bool = False
    """Anyone may see it and follow it (other tenants too); else only its owner."""
    archived: bool = False
    """Put away: no longer polled, listed or followed; kept with its history."""
    pace: bool = False
    """Say the pace of counting ("about 400 ballots an hour") while the race is open: opt-in."""

    def __post_init__(self) -> None:
        where = f"count {self.id[:64]!r}"
        if not OWNER.match(self.owner):
            raise ConfigError(f"{where}: owner {self.owner!r} is not 'operator' or platform:place")
        if not SLUG.match(self.id):
            raise ConfigError(
                f"{where}: the id must be a lowercase slug like 'bessemer-2021' "
                "(letters, digits and dashes, at most 64)"
            )
        if not self.title.strip():
            raise ConfigError(f"{where}: the title is empty")
        if len(self.choices) < 2:
            raise ConfigError(f"{where}: a count needs at least two choices")
        over = count_problem(self.title, [c.label for c in self.choices], self.choice_ids)
        if over is not None:
            raise ConfigError(f"{where}: {over}")
        ids = [c.id for c in self.choices]
        for c in self.choices:
            if not CHOICE_ID.match(c.id):
                raise ConfigError(
                    f"{where}: choice id {c.id[:40]!r} must be lowercase letters, digits, '-' "
                    f"or '_', at most {MAX_CHOICE_ID}"
                )
        if len(set(ids)) != len(ids):
            raise ConfigError(f"{where}: choice ids must be unique, got {ids}")
        rule = self.rule
        if rule.tie_holder is not None and rule.tie_holder not in ids:
            raise ConfigError(f"{where}: tie_holder {rule.tie_holder!r} is not one of {ids}")
        if rule.kind is RuleKind.MAJORITY and rule.tie_holder is not None and len(ids) > 2:
            raise ConfigError(
                f"{where}: with three or more choices a majority count has no tie_holder "
                "(no majority means a runoff); remove tie_holder"
            )
        if rule.kind is RuleKind.THRESHOLD:
            t = rule.threshold
            if t is None or not (Fraction(1, 2) < t <= 1):
                raise ConfigError(
                    f"{where}: a threshold count needs a threshold above 1/2 and at most 1, "
                    'e.g. threshold = "2/3"'
                )
        elif rule.threshold is not None:
            raise ConfigError(f'{where}: threshold only applies to rule = "threshold"')
        for name in ("eligible", "received"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ConfigError(f"{where}: {name} cannot be negative")

    @property
    def choice_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.choices)

    def label(self, choice_id: str) -> str:
        for c in self.choices:
            if c.id == choice_id:
                return c.label
        raise KeyError(choice_id)

    def with_status(self, status: CountStatus) -> Count:
        return replace(self, status=status)


@dataclass(frozen=True, slots=True)
class Tally:
    """One snapshot of a count's figures.

    ``challenged`` are ballots set aside unresolved (they may yet be counted or thrown out);
    ``sustained`` are challenged ballots whose challenge was upheld (the NLRB's "challenges
    sustained"): resolved, never counted, no longer pending. When challenges are resolved the
    ballots leave ``challenged`` for the counted figures (the challenge overruled, the ballot
    opened) or for ``sustained``. ``received`` is the number of ballots received when the source
    knows it (otherwise the count's own figure is used). ``seq`` is given by the store when the
    tally is accepted, and ``headline`` once its message is worded: what it was published
    with, kept as published. ``correction`` marks a tally that is allowed to lower figures or
    change a final count.
    """

    count_id: str
    votes: Mapping[str, int]
    observed_at: datetime
    source: str
    void: int = 0
    challenged: int = 0
    received: int | None = None
    state: TallyState = TallyState.COUNTING
    seq: int = 0
    correction: bool = False
    sustained: int = 0
    headline: str = ""

    def figures(self) -> tuple[object, ...]:
        """What makes two tallies the same count state (ignores time, source and seq)."""
        return (
            tuple(sorted(self.votes.items())),
            self.void,
            self.challenged,
            self.received,
            self.state,
            self.sustained,
        )

    def with_seq(self, seq: int) -> Tally:
        return replace(self, seq=seq)
