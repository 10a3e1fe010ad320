"""The process charts are drawn in, so that matplotlib never enters the bot's own.

Drawing one chart imports matplotlib's drawing modules, its fonts and PIL, some 50 MB that a
process never gives back. ``ChartProcess`` draws in a child process instead: one worker of a
``ProcessPoolExecutor``, started (``spawn``: the bot has threads, so never ``fork``) on the
first chart, one chart at a time, and shut down once no chart was asked for ``idle_s`` seconds,
or when the last app holding it closes, so its memory goes back to the system. A child that dies
(killed, out of memory) fails the charts it was drawing with ``ChartError``; the next chart
starts a new one.

What is drawn is a module-level function (``bot.chart.render_chart``), sent by name with the
count and its tallies (picklable dataclasses); the bytes come back.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Protocol

from bot.domain.model import Count, Tally
from bot.errors import ChartError

IDLE_S = 60.0
"""How long the drawing process waits for another chart before it exits."""

Render = Callable[[Count, Sequence[Tally]], bytes]
"""Draws a chart; a module-level function, as it is sent to the child by name."""
Later = Callable[[float, Callable[[], None]], object]
"""Calls a function after some seconds (``loop.call_later`` by default; tests move it)."""


class Draws(Protocol):
    """Where charts are drawn (a :class:`ChartProcess`)."""

    async def draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        """``render(count, history)``, somewhere off the event loop."""
        ...


def _call_later(delay: float, callback: Callable[[], None]) -> object:
    return asyncio.get_running_loop().call_later(delay, callback)


def _pid_of(pool: ProcessPoolExecutor) -> int:
    """The pid of ``pool``'s one worker (started with the first task)."""
    (pid,) = pool._processes  # concurrent.futures keeps them by pid, no public accessor
    return pid


class ChartProcess:
    """A child process that draws charts, started when needed and gone when idle."""

    def __init__(self, *, idle_s: float = IDLE_S, later: Later = _call_later) -> None:
        if idle_s <= 0:
            raise ValueError(f"the drawing process waits a positive time, got {idle_s}")
        self.idle_s = idle_s
        self._later = later
        self._pool: ProcessPoolExecutor | None = None
        self._drawing = 0
        """Charts asked for and not answered yet."""
        self._asked = 0
        """Charts asked for so far: an idle timer set before the last one does nothing."""
        self._holders = 0

    @property
    def pid(self) -> int | None:
        """The child's process id, while there is one drawing or waiting for work."""
        if self._pool is None or not self._pool._processes:
            return None
        return _pid_of(self._pool)

    async def draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        """``render(count, history)``, run in the child; its errors come back as they are."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn")
            )
        pool = self._pool
        self._drawing += 1
        self._asked += 1
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(pool, render, count, tuple(history))
        except BrokenProcessPool as exc:
            self._drop(pool)
            raise ChartError(f"the chart process died while drawing {count.id}: {exc}") from exc
        finally:
            self._drawing -= 1
            asked = self._asked
            self._later(self.idle_s, lambda: self._close_if_idle(asked))

    def _close_if_idle(self, asked: int) -> None:
        if self._pool is not None and self._drawing == 0 and self._asked == asked:
            self._drop(self._pool)

    def _drop(self, pool: ProcessPoolExecutor) -> None:
        """Let ``pool`` go: its worker exits once done (the next chart starts another)."""
        if self._pool is pool:
            self._pool = None
        pool.shutdown(wait=False, cancel_futures=True)

    def hold(self) -> None:
        """One more user (an app); the last to :meth:`release` it shuts the process down."""
        self._holders += 1

    async def release(self) -> None:
        """One user less; the last one shuts the process down."""
        self._holders -= 1
        if self._holders <= 0:
            self._holders = 0
            await self.aclose()

    async def aclose(self) -> None:
        """Shut the process down now, and wait for it to exit."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await asyncio.to_thread(pool.shutdown, wait=True, cancel_futures=True)


CHARTS = ChartProcess()
"""The process every chart of this bot is drawn in (charts are drawn one at a time)."""
