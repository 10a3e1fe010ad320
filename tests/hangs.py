"""What a test that timed out was waiting for: :func:`report`, written by the conftest's
``pytest_timeout_set_timer`` wrapper when pytest-timeout's alarm goes off (signal method).

A hung async test most often waits for a future no one will ever set (the loop then has no
timer left): pytest-timeout's own dump shows the threads only, where the loop's thread sits in
``select``. This adds the running loop's timers and every task, each with the future it waits
on and its stack, then every thread's stack as faulthandler gives it (a driver's thread waiting
on its queue shows there).
"""

from __future__ import annotations

import asyncio
import faulthandler
import io
import tempfile
import threading
import traceback
from collections.abc import Iterator
from types import FrameType


def report() -> str:
    """The running loop (its timers, ready callbacks, tasks with their stacks) and every
    thread's stack, as text."""
    out = io.StringIO()
    loop = asyncio.events._get_running_loop()
    if loop is None:
        out.write("no asyncio event loop running in this thread\n")
    else:
        _loop(loop, out)
    _threads(out)
    return out.getvalue()


def _loop(loop: asyncio.AbstractEventLoop, out: io.StringIO) -> None:
    timers = sorted(getattr(loop, "_scheduled", []), key=lambda h: h.when())
    ready = list(getattr(loop, "_ready", []))
    out.write(f"asyncio loop {loop!r}: {len(timers)} timer(s), {len(ready)} ready callback(s)\n")
    for handle in timers[:20]:
        out.write(f"  timer in {handle.when() - loop.time():.3f} s: {handle!r}\n")
    for handle in ready[:20]:
        out.write(f"  ready: {handle!r}\n")
    tasks = sorted(asyncio.all_tasks(loop), key=lambda t: t.get_name())
    out.write(f"{len(tasks)} task(s):\n")
    for task in tasks:
        waiter = getattr(task, "_fut_waiter", None)
        out.write(f"--- task {task.get_name()}: {task.get_coro()!r}\n")
        out.write(f"    waits on: {waiter!r}\n")
        if waiter is not None:
            for callback, _context in getattr(waiter, "_callbacks", None) or []:
                out.write(f"      done callback: {callback!r}\n")
        frames = [(frame, frame.f_lineno) for frame in awaiting(task)]
        out.write("".join(traceback.StackSummary.extract(frames).format()))
        out.write(f"    at the bottom: {_bottom(task)!r}\n")


def awaiting(task: asyncio.Task[object]) -> Iterator[FrameType]:
    """The frames ``task`` is suspended in, outermost first, down the chain of awaits
    (``task.get_stack()`` gives the outermost coroutine's frame alone)."""
    for awaitable in _chain(task.get_coro()):
        frame = _frame(awaitable)
        if frame is not None:
            yield frame


def _chain(awaitable: object) -> Iterator[object]:
    while awaitable is not None:
        yield awaitable
        awaitable = next(
            (
                found
                for name in ("cr_await", "gi_yieldfrom", "ag_await")
                if (found := getattr(awaitable, name, None)) is not None
            ),
            None,
        )


def _frame(awaitable: object) -> FrameType | None:
    for name in ("cr_frame", "gi_frame", "ag_frame"):
        frame = getattr(awaitable, name, None)
        if frame is not None:
            return frame  # type: ignore[no-any-return]
    return None


def _bottom(task: asyncio.Task[object]) -> object:
    """What the innermost await of ``task`` waits on (a future, most often)."""
    *_, last = _chain(task.get_coro())
    return last


def _threads(out: io.StringIO) -> None:
    names = {t.ident: f"{t.name} (daemon={t.daemon})" for t in threading.enumerate()}
    out.write(f"{len(names)} thread(s): {sorted(names.values())}\n")
    with tempfile.TemporaryFile("w+") as dump:
        faulthandler.dump_traceback(dump, all_threads=True)
        dump.seek(0)
        text = dump.read()
    for ident, name in names.items():
        if ident is not None:
            text = text.replace(f"Thread 0x{ident:016x}", f"Thread 0x{ident:016x} {name}")
    out.write(text)
