"""Rate limiters on an injected clock, for the loopback fakes of the platforms
(``tests.fakes``).

Each platform documents its limits in one of three shapes, and each fake enforces its own with
these: a :class:`FixedWindow` (Discord's buckets: ``limit`` requests, then none until ``period``
after the first), a :class:`SlidingWindow` (at most ``limit`` in any ``window`` seconds: Slack's
per-minute tiers, Telegram's 20 per minute to a group) and a :class:`TokenBucket` (a burst, then
a steady rate: Slack's one post per second per channel, Telegram's 30 per second). A limiter
says how long to wait; the fake decides how to answer (a 429 with its own headers).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from bot.testing.clock import FakeClock

Clock = Callable[[], float]
"""Seconds on a clock that never goes backwards."""


def real_time_and(clock: FakeClock) -> Clock:
    """The real monotonic clock plus what a test has advanced ``clock`` (the bot's) by since:
    for a fake whose client waits on the real clock (discord.py sleeps out ``Remaining: 0`` and
    ``retry_after`` itself), so its windows pass with the real time, and jump with the bot's."""
    start = clock.monotonic()
    return lambda: time.monotonic() + clock.monotonic() - start


@dataclass
class FixedWindow:
    """A fixed window: ``limit`` requests, then nothing until ``period`` after the first."""

    limit: int
    period: float
    start: float | None = None
    count: int = 0

    def _roll(self, now: float) -> None:
        if self.start is None or now >= self.start + self.period:
            self.start = now
            self.count = 0

    def try_acquire(self, now: float) -> bool:
        self._roll(now)
        if self.count >= self.limit:
            return False
        self.count += 1
        return True

    def remaining(self, now: float) -> int:
        self._roll(now)
        return self.limit - self.count

    def reset_after(self, now: float) -> float:
        """Seconds until the window starts again, rounded up to the millisecond (at least 1)."""
        self._roll(now)
        assert self.start is not None
        return ceil_ms(self.start + self.period - now)


def ceil_ms(seconds: float) -> float:
    """``seconds`` rounded up to the millisecond, at least one."""
    return max(0.001, math.ceil(seconds * 1000) / 1000)


class SlidingWindow:
    """At most ``limit`` in any ``window`` seconds."""

    def __init__(self, limit: int, window: float, clock: Clock) -> None:
        if limit < 1 or window <= 0:
            raise ValueError("limit must be >= 1 and window > 0")
        self._limit, self._window, self._clock = limit, window, clock
        self._stamps: deque[float] = deque()

    def _wait(self, now: float) -> float:
        while self._stamps and self._stamps[0] <= now - self._window:
            self._stamps.popleft()
        if len(self._stamps) < self._limit:
            return 0.0
        return self._stamps[0] + self._window - now

    def wait(self) -> float:
        """Seconds until one is allowed (0: now)."""
        return self._wait(self._clock())

    def take(self) -> None:
        """Count one (whether or not :meth:`wait` allowed it)."""
        self._stamps.append(self._clock())

    def try_take(self) -> float:
        """Count one if allowed now and return 0; else the wait, counting nothing."""
        now = self._clock()
        wait = self._wait(now)
        if wait == 0.0:
            self._stamps.append(now)
        return wait


class TokenBucket:
    """``capacity`` at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float, capacity: int, clock: Clock) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("rate must be > 0 and capacity >= 1")
        self._rate, self._capacity, self._clock = rate, float(capacity), clock
        self._tokens, self._stamp = float(capacity), clock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._stamp)
        self._tokens = min(self._capacity, self._tokens + elapsed * self._rate)
        self._stamp = now

    def _wait(self) -> float:
        return 0.0 if self._tokens >= 1.0 else (1.0 - self._tokens) / self._rate

    def wait(self) -> float:
        """Seconds until one is allowed (0: now)."""
        self._refill()
        return self._wait()

    def take(self) -> None:
        """Count one (whether or not :meth:`wait` allowed it)."""
        self._refill()
        self._tokens -= 1.0

    def try_take(self) -> float:
        """Count one if allowed now and return 0; else the wait, counting nothing."""
        self._refill()
        wait = self._wait()
        if wait == 0.0:
            self._tokens -= 1.0
        return wait
