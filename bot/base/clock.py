"""Time as a plug point, so that tests drive time instead of sleeping on the real clock
(:class:`bot.testing.clock.FakeClock`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        import time

        return time.monotonic()


Sleep = Callable[[float], Awaitable[None]]
"""An ``asyncio.sleep``: injected so that tests drive time."""


class Timer(Protocol):
    """A call set by a :data:`Later`, which may be called off before it comes."""

    def cancel(self) -> None: ...


Later = Callable[[float, Callable[[], None]], Timer]
"""Calls a function after some seconds of the event loop's time (:func:`call_later` by default;
tests fire it when they say: :class:`bot.testing.clock.Timers`)."""


def call_later(delay: float, callback: Callable[[], None]) -> Timer:
    """The running loop's ``call_later``: the default :data:`Later`."""
    return asyncio.get_running_loop().call_later(delay, callback)
