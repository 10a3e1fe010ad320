"""The platform-neutral message the formatter builds and every adapter renders.

It holds text that is already worded and numbers that are already formatted, so that Discord,
Slack and the console say exactly the same thing. Times are the exception: they stay values
(``Moment`` inside ``Timed`` text), because each surface shows them its own way, in each
reader's own zone where the platform can (Discord ``<t:...>``, Slack ``<!date...>``) and in a
configured zone where it cannot (the console). It round-trips through JSON because the outbox
stores it between the moment a tally is accepted and the moment it is delivered.

All of it is plain text: no markup of any platform. Each renderer escapes every text it takes
from here for its own surface, since any of it may quote a title, a label or a source.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from bot.domain.times import clock_time


@dataclass(frozen=True, slots=True)
class Moment:
    """A time inside worded text."""

    at: datetime
    """Timezone-aware."""
    lead: str = ""
    """The words that introduce the time (``" · as of "``), left out together with it where a
    surface shows the time apart from the text (a Discord embed's own timestamp)."""
    relative: bool = False
    """Best read relative to now ("3 minutes ago") where the surface can say it so."""
    words: str = ""
    """For a relative moment: how it reads relative to when it was worded ("in 10 hours"),
    which a surface that cannot say it relative to its reader's now shows instead of the time
    (:func:`fixed`); empty: such a surface shows the time."""


Part = str | Moment
ShowTime = Callable[[Moment], str]


def fixed(time: ShowTime) -> ShowTime:
    """``time`` for a surface that shows times in a fixed zone: a relative moment that has its
    ``words`` is shown as them ("in 10 hours"), the others through ``time``."""

    def show(moment: Moment) -> str:
        return moment.words if moment.relative and moment.words else time(moment)

    return show


def utc_time(moment: Moment) -> str:
    """A moment as ``8 Apr 2021 18:00 UTC`` (logs, tests, the fallback of Slack's dates)."""
    return clock_time(moment.at, UTC)


@dataclass(frozen=True, slots=True)
class Timed:
    """Worded text with times in it: text parts and ``Moment``s, in order.

    ``str()`` gives it with the times in UTC; ``show`` with each surface's own escaping of the
    text and its own way of showing a time."""

    parts: tuple[Part, ...]

    @classmethod
    def of(cls, *parts: Part) -> Timed:
        return cls(tuple(p for p in parts if not isinstance(p, str) or p))

    def show(self, text: Callable[[str], str], time: ShowTime | None) -> str:
        """The text through ``text`` and every moment (with its lead) through ``time``; with
        ``time`` None, moments are left out together with their leads."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(text(part))
            elif time is not None:
                out.append(text(part.lead) + time(part))
        return "".join(out)

    @property
    def moments(self) -> tuple[Moment, ...]:
        return tuple(p for p in self.parts if isinstance(p, Moment))

    def lines(self) -> Iterator[Timed]:
        """The text cut at its line breaks (a moment never holds one)."""
        line: list[Part] = []
        for part in self.parts:
            if isinstance(part, Moment):
                line.append(part)
                continue
            first, *rest = part.split("\n")
            line.append(first)
            for piece in rest:
                yield Timed.of(*line)
                line = [piece]
        yield Timed.of(*line)

    def __str__(self) -> str:
        return self.show(str, fixed(utc_time))

    def to_raw(self) -> list[Any]:
        return [p if isinstance(p, str) else _raw(p) for p in self.parts]

    @classmethod
    def from_raw(cls, raw: Any) -> Timed:
        """From ``to_raw``; a plain string too (what the outbox held before times were values)."""
        if isinstance(raw, str):
            return cls.of(raw)
        return cls(
            tuple(
                p
                if isinstance(p, str)
                else Moment(
                    datetime.fromisoformat(p["at"]), p["lead"], p["relative"], p.get("words", "")
                )
                for p in raw
            )
        )


def _raw(moment: Moment) -> dict[str, Any]:
    raw: dict[str, Any] = {"at": moment.at.isoformat(), "lead": moment.lead}
    raw["relative"] = moment.relative
    return raw | ({"words": moment.words} if moment.words else {})


class Significance(StrEnum):
    ROUTINE = "routine"
    SIGNIFICANT = "significant"


@dataclass(frozen=True, slots=True)
class ChoiceLine:
    choice_id: str
    label: str
    votes: int
    votes_text: str
    """Votes with thousands separators, e.g. ``1,100``."""
    share_text: str
    """Share of valid votes with one decimal, e.g. ``70.4%``; ``-`` when nothing is counted."""
    share: float
    """Share of valid votes from 0 to 1, for bars drawn by a platform."""
    bar: str
    """A text progress bar of the share."""
    note: str
    """What this choice still needs, e.g. ``needs 508 more to clinch``, or ``clinched``."""
    leading: bool
    winner: bool
    position: int
    """Index of the choice in the count's own order (for a stable colour per choice)."""


@dataclass(frozen=True, slots=True)
class Message:
    count_id: str
    title: str
    seq: int
    headline: str
    choices: tuple[ChoiceLine, ...]
    lines: tuple[str, ...]
    """Margin, what remains, challenged, turnout: one sentence each."""
    footer: Timed
    """Provenance: final or unofficial, the source, as of when, the update's number."""
    significance: Significance
    events: tuple[str, ...]
    leader: str | None
    winner: str | None
    final: bool
    notes: tuple[Timed, ...] = ()
    """Sentences with times in them, after ``lines`` (``status``: when the source was last
    checked and last changed)."""
    mention: str | None = None
    """The role or user group (its platform id) this post pings: set only on the calls and the
    final of a subscription that asked for it (``mention=``); nothing else ever pings."""

    @property
    def significant(self) -> bool:
        return self.significance is Significance.SIGNIFICANT

    @property
    def leader_position(self) -> int | None:
        for c in self.choices:
            if c.choice_id == self.leader:
                return c.position
        return None

    def to_json(self) -> str:
        raw = asdict(self)
        raw["footer"] = self.footer.to_raw()
        raw["notes"] = [n.to_raw() for n in self.notes]
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Message:
        raw: dict[str, Any] = json.loads(text)
        raw["choices"] = tuple(ChoiceLine(**c) for c in raw["choices"])
        raw["lines"] = tuple(raw["lines"])
        raw["events"] = tuple(raw["events"])
        raw["significance"] = Significance(raw["significance"])
        raw["footer"] = Timed.from_raw(raw["footer"])
        raw["notes"] = tuple(Timed.from_raw(n) for n in raw.get("notes", ()))
        return cls(**raw)


@dataclass(frozen=True, slots=True)
class Notice:
    """A plain note for admins: a source went stale, a channel was disabled, a tally rejected."""

    text: str
    count_id: str | None = None
    group: str | None = None
    """What joins it with the like notices still waiting to go (the channels one cause stopped
    in one server: ``bot.delivery.alert_groups``)."""
    parts: tuple[str, ...] = ()
    """What it tells of, when grouped: one entry a channel."""

    def to_json(self) -> str:
        doc: dict[str, object] = {"text": self.text, "count_id": self.count_id}
        if self.group is not None:
            doc |= {"group": self.group, "parts": list(self.parts)}
        return json.dumps(doc)

    @classmethod
    def from_json(cls, text: str) -> Notice:
        raw = json.loads(text)
        parts = tuple(str(p) for p in raw.get("parts", ()))
        return cls(raw["text"], raw["count_id"], raw.get("group"), parts)


Outgoing = Message | Notice


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that goes with a reply, such as a chart: its name, its bytes, and a description of
    what it shows for those who cannot see it (alt text)."""

    filename: str
    data: bytes
    description: str
