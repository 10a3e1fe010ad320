"""The recorded-timeline format shared by :mod:`bot.ingest.recording` and
:mod:`bot.ingest.sources.replay`: JSON Lines, one tally per line::

    {"at": 0, "votes": {"yes": 120, "no": 310}, "void": 3, "challenged": 40, "received": 3215, "state": "counting"}
    {"at": 5400, "votes": {"yes": 463, "no": 1100}, "state": "paused", "note": "overnight pause"}

Keys: ``at`` (required) seconds from the start of the recording, never decreasing; ``votes``
(required) a figure for every choice of the count and no others; ``void``, ``challenged``,
``sustained`` (challenges upheld; default 0); ``received`` (default null: unknown); ``state`` (``counting``, ``paused`` or
``final``; default counting); ``note`` (optional text, not part of the tally); ``correction``
(optional, default false); ``observed_at`` (optional ISO 8601 time the tally was first seen,
written by the recorder; replay stamps the tally with it). Blank lines are ignored; any other
key is an error.
"""  # noqa: E501

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from bot.domain.model import Count, Tally, TallyState
from bot.errors import PermanentSourceError
from bot.ingest.sources.mapping import Found, parse_figure

KEYS = frozenset(
    {
        "at",
        "votes",
        "void",
        "challenged",
        "sustained",
        "received",
        "state",
        "note",
        "correction",
        "observed_at",
    }
)
"""Every key a timeline line may have."""


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One line of a timeline."""

    at: float
    votes: Mapping[str, int]
    void: int = 0
    challenged: int = 0
    received: int | None = None
    state: TallyState = TallyState.COUNTING
    sustained: int = 0
    note: str | None = None
    correction: bool = False
    observed_at: datetime | None = None

    @classmethod
    def from_tally(cls, tally: Tally, at: float, *, note: str | None = None) -> TimelineEntry:
        """The entry recording ``tally`` at ``at`` seconds."""
        return cls(
            at=at,
            votes=dict(tally.votes),
            void=tally.void,
            challenged=tally.challenged,
            sustained=tally.sustained,
            received=tally.received,
            state=tally.state,
            note=note,
            correction=tally.correction,
            observed_at=tally.observed_at,
        )

    def to_tally(self, count_id: str, *, observed_at: datetime, source: str) -> Tally:
        """The tally this entry describes, as seen at ``observed_at`` from ``source``."""
        return Tally(
            count_id=count_id,
            votes=dict(self.votes),
            observed_at=observed_at,
            source=source,
            void=self.void,
            challenged=self.challenged,
            sustained=self.sustained,
            received=self.received,
            state=self.state,
            correction=self.correction,
        )

    def to_json(self) -> str:
        """The entry as one JSON line (without the newline)."""
        line: dict[str, object] = {
            "at": self.at,
            "votes": dict(self.votes),
            "void": self.void,
            "challenged": self.challenged,
            "received": self.received,
            "state": self.state.value,
        }
        if self.sustained:
            line["sustained"] = self.sustained
        if self.note is not None:
            line["note"] = self.note
        if self.correction:
            line["correction"] = True
        if self.observed_at is not None:
            line["observed_at"] = self.observed_at.isoformat()
        return json.dumps(line, ensure_ascii=False, separators=(", ", ": "))


def parse_timeline(text: str, count: Count, label: str) -> list[TimelineEntry]:
    """Every entry of a timeline for ``count``; PermanentSourceError naming line and key."""
    entries: list[TimelineEntry] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = parse_line(line, count)
        except PermanentSourceError as exc:
            raise PermanentSourceError(f"{label}: line {n}: {exc}") from None
        if entries and entry.at < entries[-1].at:
            raise PermanentSourceError(
                f"{label}: line {n}: at {entry.at:g} is earlier than the line before "
                f"({entries[-1].at:g})"
            )
        entries.append(entry)
    if not entries:
        raise PermanentSourceError(f"{label}: the timeline has no entries")
    return entries


def parse_line(line: str, count: Count) -> TimelineEntry:
    """One timeline line; PermanentSourceError naming the key at fault."""
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise PermanentSourceError(f"not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise PermanentSourceError("a line must be a JSON object")
    unknown = sorted(set(raw) - KEYS)
    if unknown:
        raise PermanentSourceError(f"unknown key {unknown[0]!r}")
    at = raw.get("at")
    if isinstance(at, bool) or not isinstance(at, int | float):
        raise PermanentSourceError(f"at: {at!r} is not a number of seconds")
    if not math.isfinite(at) or at < 0:
        raise PermanentSourceError(f"at: {at!r} must be a finite number >= 0")
    votes_raw = raw.get("votes")
    if not isinstance(votes_raw, dict):
        raise PermanentSourceError(f"votes: {votes_raw!r} is not an object of choice figures")
    for key in votes_raw:
        if key not in count.choice_ids:
            raise PermanentSourceError(f"votes: unknown choice {key!r}")
    votes: dict[str, int] = {}
    for choice in count.choice_ids:
        if choice not in votes_raw:
            raise PermanentSourceError(f"votes.{choice}: missing")
        votes[choice] = _figure(f"votes.{choice}", votes_raw[choice], required=True) or 0
    state_raw = raw.get("state", TallyState.COUNTING.value)
    try:
        state = TallyState(state_raw)
    except ValueError:
        names = ", ".join(s.value for s in TallyState)
        raise PermanentSourceError(f"state: {state_raw!r} is not one of {names}") from None
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise PermanentSourceError(f"note: {note!r} is not text")
    correction = raw.get("correction", False)
    if not isinstance(correction, bool):
        raise PermanentSourceError(f"correction: {correction!r} is not true or false")
    return TimelineEntry(
        at=at,
        votes=votes,
        void=_figure("void", raw.get("void"), required=False) or 0,
        challenged=_figure("challenged", raw.get("challenged"), required=False) or 0,
        sustained=_figure("sustained", raw.get("sustained"), required=False) or 0,
        received=_figure("received", raw.get("received"), required=False),
        state=state,
        note=note,
        correction=correction,
        observed_at=_time(raw.get("observed_at")),
    )


def _figure(target: str, value: object, *, required: bool) -> int | None:
    if isinstance(value, str):  # the format holds JSON numbers, not text
        raise PermanentSourceError(f"{target}: {value!r} is not a number")
    figure = parse_figure(target, Found(value, "timeline"), thousands=False)
    if figure is None and required:
        raise PermanentSourceError(f"{target}: the value is empty")
    return figure


def _time(value: object) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise PermanentSourceError(f"observed_at: {value!r} is not an ISO 8601 time")
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise PermanentSourceError(f"observed_at: {value!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise PermanentSourceError(f"observed_at: {value!r} has no time zone")
    return when
