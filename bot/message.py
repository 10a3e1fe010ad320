"""The platform-neutral message the formatter builds and every adapter renders.

It holds text that is already worded and numbers that are already formatted, so that Discord,
Slack and the console say exactly the same thing. It round-trips through JSON because the
outbox stores it between the moment a tally is accepted and the moment it is delivered.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


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
    footer: str
    significance: Significance
    events: tuple[str, ...]
    leader: str | None
    winner: str | None
    final: bool

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
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Message:
        raw: dict[str, Any] = json.loads(text)
        raw["choices"] = tuple(ChoiceLine(**c) for c in raw["choices"])
        raw["lines"] = tuple(raw["lines"])
        raw["events"] = tuple(raw["events"])
        raw["significance"] = Significance(raw["significance"])
        return cls(**raw)
