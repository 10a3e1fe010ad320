"""Telegram's size limits and flood control, timed by an injected clock.

The Bot FAQ gives the flood limits only roughly ("about 30 messages per second" overall,
"no more than one message per second" per chat "with short bursts", "no more than 20
messages per minute" to one group or channel); Telegram may change them. Edits in groups
are limited too (unofficial; the same 20 per minute here, tunable or off).
Over a limit the answer is 429 with ``parameters.retry_after`` in whole seconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tests.fakes.loopback.limits import SlidingWindow, TokenBucket

TEXT_LIMIT = 4096
"""Characters (code points) per message text, counted after entity parsing."""
CAPTION_LIMIT = 1024
"""Characters per media caption, counted after entity parsing."""
CALLBACK_DATA_LIMIT = 64
"""Bytes of an inline button's callback_data."""
CALLBACK_ANSWER_TEXT_LIMIT = 200
MAX_PHOTO_BYTES = 10 * 1024 * 1024
MAX_COMMANDS = 100
DELETE_WINDOW_S = 48 * 3600.0
"""A message older than 48 hours can't be deleted for everyone."""
UPDATE_RETENTION_S = 24 * 3600.0
"""Unconfirmed updates are kept for 24 hours."""

Scope = Literal["overall", "chat", "group", "group_edit"]
Clock = Callable[[], float]


@dataclass(frozen=True)
class FloodLimits:
    """The limits the fake enforces; ``None`` switches one off."""

    overall_per_s: float | None = 30.0
    overall_burst: int = 30
    chat_per_s: float | None = 1.0
    chat_burst: int = 3
    """The "short bursts" a chat allows above 1 per second (unofficial figure)."""
    group_per_min: int | None = 20
    group_edits_per_min: int | None = 20
    retry_after: int | None = None
    """Announce this retry_after instead of the honest wait (e.g. 0 or a large value)."""


@dataclass(frozen=True)
class Throttled:
    scope: Scope
    wait: float
    retry_after: int


class FloodControl:
    """Decides whether a send or an edit may go now; takes nothing when it refuses."""

    def __init__(self, limits: FloodLimits, clock: Clock) -> None:
        self.limits = limits
        self._clock = clock
        self._overall = (
            TokenBucket(limits.overall_per_s, limits.overall_burst, clock)
            if limits.overall_per_s
            else None
        )
        self._chats: dict[int, TokenBucket] = {}
        self._groups: dict[int, SlidingWindow] = {}
        self._group_edits: dict[int, SlidingWindow] = {}

    def admit(
        self, kind: Literal["send", "edit"], chat_id: int, is_group: bool
    ) -> Throttled | None:
        """None when allowed (and counted), else the longest wait and its scope."""
        gates: list[tuple[Scope, TokenBucket | SlidingWindow]] = []
        limits = self.limits
        if kind == "send":
            if self._overall is not None:
                gates.append(("overall", self._overall))
            if limits.chat_per_s:
                bucket = self._chats.get(chat_id)
                if bucket is None:
                    bucket = TokenBucket(limits.chat_per_s, limits.chat_burst, self._clock)
                    self._chats[chat_id] = bucket
                gates.append(("chat", bucket))
            if is_group and limits.group_per_min:
                gates.append(("group", self._window(self._groups, chat_id, limits.group_per_min)))
        elif is_group and limits.group_edits_per_min:
            window = self._window(self._group_edits, chat_id, limits.group_edits_per_min)
            gates.append(("group_edit", window))
        waits = [(gate.wait(), scope) for scope, gate in gates]
        worst = max(waits, default=(0.0, "overall"))
        if worst[0] > 0:
            announced = limits.retry_after
            if announced is None:
                announced = max(1, math.ceil(worst[0]))
            return Throttled(worst[1], worst[0], announced)
        for _, gate in gates:
            gate.take()
        return None

    def _window(self, table: dict[int, SlidingWindow], chat_id: int, per_min: int) -> SlidingWindow:
        window = table.get(chat_id)
        if window is None:
            window = table[chat_id] = SlidingWindow(per_min, 60.0, self._clock)
        return window
