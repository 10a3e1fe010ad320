"""Pacing, so that the bot stays under a platform's limits instead of drawing 429s.

Platforms count requests in windows ("50 per second", "5 per 5 seconds per channel"), by when
the requests *arrive*. A token bucket of the same rate lets nearly twice that through one window
after an idle spell, so the limiter here books one slot per request and lets a request go only
when the ``limit``-th most recent one is a whole ``window`` (plus a small margin) in the past.

A request's arrival lies somewhere between its start and its response, and that delay varies,
so a slot counts from when the request *finished* (``done``), not from when it was booked: two
requests that share a slot then arrive at least a window apart, whatever the network did in
between. That satisfies both sliding windows and Discord's fixed windows.

``reserve()`` books a slot and says how long to wait for it: bookings queue in arrival order,
so concurrent callers are served fairly and the limiter is never overdrawn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from bot.clock import Clock

Sleep = Callable[[float], Awaitable[None]]


class Slot:
    """One booked request: ``at`` is when it may start, then when it finished."""

    __slots__ = ("at",)

    def __init__(self, at: float) -> None:
        self.at = at


class RateLimiter:
    def __init__(self, limit: int, window: float, clock: Clock, *, margin: float = 0.02) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("a rate limit needs at least one request per positive window")
        self.limit = limit
        self.window = window * (1 + margin)
        self.clock = clock
        self._slots: deque[Slot] = deque(maxlen=limit)

    def reserve(self) -> tuple[Slot, float]:
        """Book the next free slot; return it and the seconds to wait until it."""
        now = self.clock.monotonic()
        at = now
        if len(self._slots) == self.limit:
            at = max(now, self._slots[0].at + self.window)
        if self._slots:
            at = max(at, self._slots[-1].at)  # a later booking never goes first
        slot = Slot(at)
        self._slots.append(slot)
        return slot, at - now

    def fill(self) -> None:
        """Count the window as used up now: for requests made outside the limiter (an adapter's
        own start-up calls), so that the first paced ones cannot join them in one window."""
        now = self.clock.monotonic()
        self._slots.extend(Slot(now) for _ in range(self.limit))

    def done(self, slot: Slot) -> None:
        """The request of ``slot`` has finished: its window counts from now."""
        slot.at = max(slot.at, self.clock.monotonic())

    def delay(self) -> float:
        """Seconds until a slot would be free, without booking it."""
        if len(self._slots) < self.limit:
            return 0.0
        return max(0.0, self._slots[0].at + self.window - self.clock.monotonic())

    @asynccontextmanager
    async def slot(self, sleep: Sleep) -> AsyncIterator[None]:
        """Wait for a slot, run the request in the block, and count the slot from its end."""
        booked, wait = self.reserve()
        if wait > 0:
            await sleep(wait)
        try:
            yield
        finally:
            self.done(booked)
