"""Pacing, so that the bot stays under a platform's limits instead of drawing 429s.

Platforms count requests in windows ("50 per second", "5 per 5 seconds per channel"). A token
bucket of the same rate lets nearly twice that through one window after an idle spell, so the
limiter here keeps the times of the last ``limit`` requests and lets the next one go only when
the oldest of them is a whole ``window`` (plus a small margin for network jitter) in the past.
That satisfies both sliding and fixed windows.

``reserve()`` books a slot and says how long to wait for it: bookings queue in arrival order, so
concurrent callers are served fairly and the limiter is never overdrawn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

from bot.clock import Clock

Sleep = Callable[[float], Awaitable[None]]


class RateLimiter:
    def __init__(self, limit: int, window: float, clock: Clock, *, margin: float = 0.02) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("a rate limit needs at least one request per positive window")
        self.limit = limit
        self.window = window * (1 + margin)
        self.clock = clock
        self._slots: deque[float] = deque(maxlen=limit)

    @classmethod
    def per_second(cls, rate: float, clock: Clock, *, margin: float = 0.02) -> RateLimiter:
        """``rate`` requests per second, as a window of one second (or longer for rate < 1)."""
        if rate >= 1:
            return cls(int(rate), 1.0, clock, margin=margin)
        return cls(1, 1 / rate, clock, margin=margin)

    def reserve(self) -> float:
        """Book the next free slot; return the seconds to wait until it."""
        now = self.clock.monotonic()
        at = now
        if len(self._slots) == self.limit:
            at = max(now, self._slots[0] + self.window)
        if self._slots:
            at = max(at, self._slots[-1])  # keep bookings in order
        self._slots.append(at)
        return at - now

    def delay(self) -> float:
        """Seconds until a slot would be free, without booking it."""
        if len(self._slots) < self.limit:
            return 0.0
        return max(0.0, self._slots[0] + self.window - self.clock.monotonic())

    async def acquire(self, sleep: Sleep) -> None:
        wait = self.reserve()
        if wait > 0:
            await sleep(wait)
