"""Commands being answered, on any platform: each answered whatever goes wrong, and waited for
(briefly) when the bot leaves.

:func:`guarded` runs the work of answering one command; if it raises anything, the error is
logged and the person is answered with :data:`~bot.commands.request.FAILED` instead (if even
that fails, it is logged too). :class:`InFlight` keeps the tasks answering commands so that
leaving lets them finish for a grace period, then cancels what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any

from bot.commands.request import FAILED, Reply

log = logging.getLogger(__name__)

GRACE_S = 5.0
"""How long leaving waits for commands being answered before cancelling them."""

Answer = Callable[[Reply], Awaitable[object]]


async def guarded(what: str, work: Awaitable[None], answer: Answer) -> None:
    """Await ``work`` (answering a command); if it raises, log it and ``answer`` with FAILED."""
    try:
        await work
    except Exception:  # every command gets an answer, whatever went wrong
        log.exception("%s failed", what)
        try:
            await answer(FAILED)
        except Exception as exc:  # the platform is not answering either
            log.warning("could not answer a failed %s either: %s", what, exc)


class InFlight:
    """The tasks answering commands (see the module docstring)."""

    def __init__(self, grace: float = GRACE_S) -> None:
        self.grace = grace
        self._tasks: set[asyncio.Task[Any]] = set()

    @contextlib.contextmanager
    def tracked(self) -> Iterator[None]:
        """The current task answers a command until the block ends."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def run(self, what: str, work: Awaitable[None], answer: Answer) -> None:
        """:func:`guarded`, tracked."""
        with self.tracked():
            await guarded(what, work, answer)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Start ``work`` in a task of its own, tracked until it ends."""
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def settled(self) -> None:
        """Wait, for the grace period at most, until what is being answered now is answered
        (cancelling nothing)."""
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=self.grace)

    async def finish(self) -> None:
        """Let what is being answered finish, for the grace period; cancel what is left."""
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=self.grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
