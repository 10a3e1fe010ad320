"""Turns of a budget shared by the instances of one PostgreSQL store, reserved from its row.

Used where the instances must space *starts* among themselves without one of them holding the
whole budget: Discord's session starts (identify), one per 5 s in each ``max_concurrency``
bucket (``bot.cluster.shards``). Each instance reserves turns from the budget's row in the store
(``bot.store.buckets.reserve``), a few at a time, and starts one thing per turn, so all of them
together keep to the budget's rate evenly spaced. (Message sending is not spaced this way: a
platform's whole sending budget is leased to one instance, ``bot.delivery.shared``.)
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable

from bot.base.clock import Clock, Sleep
from bot.delivery.pacing import Window

SAFETY = 0.9
"""The share of a budget's rate the turns are spaced for: turns space the *starts*, the
platform counts *arrivals*, which no instance sees for another's."""
CHUNK_S = 0.1
"""About how many seconds of turns one reservation takes."""

Reserve = Callable[[str, int, float], Awaitable[float]]
"""Reserves ``turns`` turns of a budget, one each ``every`` seconds; the delay to the first."""


class SharedTurns:
    """The turns of one shared budget this instance may use (see the module docstring)."""

    def __init__(
        self, name: str, window: Window, clock: Clock, sleep: Sleep, reserve: Reserve
    ) -> None:
        self.name = name
        self.window = window
        # A window of a few starts has no room for one that arrives late: one fewer.
        per_window = min(window.limit * SAFETY, max(1.0, window.limit - 1.0))
        self.every = window.seconds / per_window
        self.chunk = max(1, int(CHUNK_S / self.every))
        self.clock = clock
        self.sleep = sleep
        self._reserve = reserve
        self._turns: deque[float] = deque()
        self._lock = asyncio.Lock()

    async def turn(self) -> None:
        """Wait for this instance's next turn. A turn woken up late (the process was busy) is
        given up and another taken: going late would bunch this instance's starts onto the
        other instances' turns."""
        while True:
            at = await self._next()
            wait = at - self.clock.monotonic()
            if wait > 0:
                await self.sleep(wait)
            if self.clock.monotonic() - at <= self.every:
                return

    async def _next(self) -> float:
        async with self._lock:
            now = self.clock.monotonic()
            while self._turns and self._turns[0] < now - self.every:
                self._turns.popleft()  # passed unused: it is gone
            if not self._turns:
                delay = await self._reserve(self.name, self.chunk, self.every)
                start = self.clock.monotonic() + delay
                self._turns.extend(start + i * self.every for i in range(self.chunk))
            return self._turns.popleft()
