"""A clock for tests: it moves only when told to (see :class:`bot.base.clock.Clock`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2021, 4, 8, 12, 0, tzinfo=UTC)
        self._mono = 1000.0

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        """A :data:`~bot.base.clock.Sleep` that moves this clock on instead of waiting (an
        ``App(sleep=clock.sleep)``'s retries back off on it)."""
        self.advance(seconds)


class _Set:
    """A callback kept by :class:`Timers`; ``cancel`` forgets it."""

    def __init__(self, timers: Timers, entry: tuple[float, Callable[[], None]]) -> None:
        self.timers = timers
        self.entry = entry

    def cancel(self) -> None:
        if self.entry in self.timers.set:
            self.timers.set.remove(self.entry)


class Timers:
    """A :data:`bot.base.clock.Later` that keeps the callbacks, to be fired when the test says."""

    def __init__(self) -> None:
        self.set: list[tuple[float, Callable[[], None]]] = []

    def __call__(self, delay: float, callback: Callable[[], None]) -> _Set:
        entry = (delay, callback)
        self.set.append(entry)
        return _Set(self, entry)

    def fire(self) -> None:
        """Every callback set so far, in the order they were set (and forgets them)."""
        due, self.set = self.set, []
        for _delay, callback in due:
            callback()
