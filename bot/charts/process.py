"""The processes charts are drawn in, so that matplotlib never enters the bot's own.

Drawing one chart imports matplotlib's drawing modules, its fonts and PIL, some 50 MB that a
process never gives back. ``ChartProcess`` draws in child processes instead
(``python -m bot.charts.child``, the same program whatever started the bot): the first started
on the first chart, a second (``workers``) only when another count asks for a chart while one
is drawing; each draws one chart at a time, and they shut down once no chart was asked for
``idle_s`` seconds, or when the app holding them closes (each app has its own:
``bot.runtime.app.App.chart_process``; tests share one), so their memory goes back to the
system. A child watches the pipe it is asked on, so it exits when the bot does, however the bot
was stopped.

No count holds the others hostage: a count's charts are drawn one at a time, so another count
finds a child free; a chart that takes longer than ``timeout_s`` is abandoned (its child is
killed, the chart fails with ``ChartError`` and the message goes without it; the next chart
starts a new child); and charts waiting for a child take turns by count. A child that dies
(killed, out of memory) fails the chart it was drawing with ``ChartError`` too.

What is drawn is a module-level function (``bot.charts.chart.render_chart``), sent by name with the
count and its tallies (picklable dataclasses); the bytes come back.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

from bot.base.clock import Later, call_later
from bot.charts.child import frame, read_frame
from bot.domain.model import Count, Tally
from bot.errors import ChartError

IDLE_S = 60.0
"""How long the drawing process waits for another chart before it exits."""
TIMEOUT_S = 5.0
"""The longest one chart may take; past it the chart is abandoned (the largest legal chart
takes well under 1.5 s, ``bench/charts.py``)."""
WORKERS = 2
"""How many children may draw at once: a second starts only when another count asks for a
chart while one is drawing, so that no count's chart waits for another's."""
START_S = 60.0
"""The longest the child may take to start (import matplotlib) before it is given up."""

Render = Callable[[Count, Sequence[Tally]], bytes]
"""Draws a chart; a module-level function, as it is sent to the child by name."""


class Draws(Protocol):
    """Where charts are drawn (a :class:`ChartProcess`)."""

    async def draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        """``render(count, history)``, somewhere off the event loop."""
        ...


class _Child:
    """One running ``bot.charts.child``, asked one chart at a time. Its pipes are read and
    written in a thread (``asyncio.to_thread``), so that it serves whichever event loop asks."""

    def __init__(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.charts.child"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
        )  # fmt: skip
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.requests = self.proc.stdin
        self.answers = self.proc.stdout

    def read(self) -> object:
        """The child's next answer (ChildGone: it died)."""
        got = read_frame(self.answers)
        if got is None:
            raise _ChildGone(f"exit status {self.proc.poll()}")
        return pickle.loads(got)

    def ask(self, render: Render, count: Count, history: Sequence[Tally]) -> object:
        try:
            self.requests.write(frame((render, count, tuple(history))))
            self.requests.flush()
        except (BrokenPipeError, ValueError) as exc:
            raise _ChildGone(str(exc)) from exc
        return self.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        """Let the child go (it exits when its input ends) and wait for it."""
        with contextlib.suppress(OSError):
            self.requests.close()
        self.proc.wait()
        self.answers.close()


class _ChildGone(Exception):
    """The child's pipe ended: it died or was killed."""


class ChartProcess:
    """Child processes that draw charts, started when needed and gone when idle: at most
    ``workers``, each drawing one chart at a time, a count's charts one at a time."""

    def __init__(
        self,
        *,
        idle_s: float = IDLE_S,
        timeout_s: float = TIMEOUT_S,
        start_s: float = START_S,
        workers: int = WORKERS,
        later: Later = call_later,
    ) -> None:
        if idle_s <= 0 or timeout_s <= 0 or start_s <= 0:
            raise ValueError(
                f"the drawing process waits a positive time, got {idle_s}, {timeout_s}, {start_s}"
            )
        if workers < 1:
            raise ValueError(f"charts are drawn by at least one process, got {workers}")
        self.idle_s = idle_s
        self.timeout_s = timeout_s
        self.start_s = start_s
        self.workers = workers
        self._later = later
        self._children: list[_Child] = []
        """Every running child, idle or drawing (the first started first)."""
        self._idle: list[_Child] = []
        self._starting: subprocess.Popen[bytes] | None = None
        self._drawing: set[str] = set()
        """The counts whose chart is being drawn (or a child started for it)."""
        self._turns: dict[str, deque[asyncio.Future[None]]] = {}
        """The charts waiting, by count, in the order their counts take turns."""
        self._asked = 0
        """Charts asked for so far: an idle timer set before the last one does nothing."""
        self._holders = 0

    @property
    def pid(self) -> int | None:
        """The first child's process id, while there is one drawing or waiting for work."""
        if self._children:
            return self._children[0].proc.pid
        return None if self._starting is None else self._starting.pid

    async def draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        """``render(count, history)``, run in a child; its errors come back as they are,
        a chart that takes longer than ``timeout_s`` fails with ``ChartError``."""
        self._asked += 1
        await self._turn(count.id)
        try:
            return await self._draw(render, count, history)
        finally:
            self._done(count.id)
            asked = self._asked
            self._later(self.idle_s, lambda: self._close_if_idle(asked))

    def _free(self, key: str) -> bool:
        return len(self._drawing) < self.workers and key not in self._drawing

    async def _turn(self, key: str) -> None:
        """Wait until a child is this chart's: counts take turns, one chart each."""
        if self._free(key) and not any(k not in self._drawing for k in self._turns):
            self._drawing.add(key)
            return
        turn = asyncio.get_running_loop().create_future()
        self._turns.setdefault(key, deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():
                self._done(key)  # it was given a child as it gave up: the next one's now
            else:
                waiting = self._turns.get(key)
                if waiting is not None and turn in waiting:
                    waiting.remove(turn)
                    if not waiting:
                        del self._turns[key]
            raise

    def _done(self, served: str) -> None:
        """``served``'s chart is done: give the free children to the counts in turn, others
        before the one just ``served``; a count given one goes to the back."""
        self._drawing.discard(served)
        while len(self._drawing) < self.workers:
            ready = [k for k in self._turns if k not in self._drawing]
            if not ready:
                return
            key = next((k for k in ready if k != served), ready[0])
            waiting = self._turns.pop(key)
            turn = waiting.popleft()
            if waiting:
                self._turns[key] = waiting
            if not turn.done():
                self._drawing.add(key)
                turn.set_result(None)

    async def _draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        child = await self._started(count)
        asking = asyncio.ensure_future(asyncio.to_thread(child.ask, render, count, history))
        try:  # not asyncio.wait_for: on 3.11 it can swallow a cancellation (gh-86296)
            async with asyncio.timeout(self.timeout_s):
                answer = await asyncio.shield(asking)
        except TimeoutError:
            await self._drop(child, kill=True, asking=asking)
            raise ChartError(
                f"the chart of {count.id} took longer than {self.timeout_s:g} s: abandoned",
                abandoned=True,
            ) from None
        except _ChildGone as exc:
            await self._drop(child, kill=True)
            raise ChartError(f"the chart process died while drawing {count.id}: {exc}") from exc
        except asyncio.CancelledError:  # the asker gave up: the child may be mid-answer
            await asyncio.shield(self._drop(child, kill=True, asking=asking))
            raise
        if child in self._children:
            self._idle.append(child)
        assert isinstance(answer, tuple)
        kind: str = answer[0]
        value: object = answer[1]
        if kind == "error":
            assert isinstance(value, BaseException)
            raise value
        assert isinstance(value, bytes)
        return value

    async def _started(self, count: Count) -> _Child:
        """An idle child, or a new one."""
        if self._idle:
            return self._idle.pop()
        child = _Child()
        self._starting = child.proc
        try:
            async with asyncio.timeout(self.start_s):
                await asyncio.shield(asyncio.to_thread(child.read))
        except TimeoutError:
            await self._drop(child, kill=True)
            raise ChartError(
                f"the chart process did not start in {self.start_s:g} s for {count.id}",
                abandoned=True,
            ) from None
        except _ChildGone as exc:
            await self._drop(child, kill=True)
            raise ChartError(f"the chart process died while drawing {count.id}: {exc}") from exc
        except asyncio.CancelledError:
            await asyncio.shield(self._drop(child, kill=True))
            raise
        finally:
            self._starting = None
        self._children.append(child)
        return child

    def _close_if_idle(self, asked: int) -> None:
        if not self._drawing and self._asked == asked:
            for child in self._idle:
                self._children.remove(child)
                child.close()  # at once: the child exits when its input ends
            self._idle.clear()

    async def _drop(
        self, child: _Child, *, kill: bool = False, asking: asyncio.Future[object] | None = None
    ) -> None:
        """Let ``child`` go (killed: at once) and wait for it to exit, and for the question
        it was being ``asking`` to end with it; the next chart starts another."""
        if child in self._children:
            self._children.remove(child)
        if child in self._idle:
            self._idle.remove(child)
        if kill:
            child.kill()
        if asking is not None:
            await asyncio.gather(asking, return_exceptions=True)
        await asyncio.to_thread(child.close)

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
        """Shut the children down now, and wait for them to exit."""
        children, self._children, self._idle = self._children, [], []
        for child in children:
            await asyncio.to_thread(child.close)
