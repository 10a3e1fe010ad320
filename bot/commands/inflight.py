"""Commands being answered, on any platform: each answered whatever goes wrong, one member's in
the order they were sent, and every one acknowledged carried out before the bot leaves.

:func:`guarded` runs the work of answering one command; if it raises anything, the error is
logged and the person is answered with :data:`~bot.commands.request.FAILED` instead (if even
that fails, it is logged too).

:class:`InOrder`: the commands of one member in one channel are carried out one after the
other, in the order they arrived (``subscribe`` then ``unsubscribe`` 20 ms apart leaves the
channel unsubscribed). An adapter takes a command's :class:`Place` as it arrives, before it
awaits anything, and carries the command out inside it (on Discord, after acknowledging it:
the 3 s for that do not wait for the member's earlier commands).

:class:`InFlight` keeps the tasks answering commands. When the bot stops, the adapter first
stops taking commands (``accepting`` is False: a command that arrives now is not
acknowledged, so the member sees it failed), then :meth:`InFlight.finish` lets every command
acknowledged so far be carried out and answered, for up to ``GRACE_S``, while the store is
still open (``bot.runtime.app.App.aclose``); only what is left then is cancelled. So that what is
acknowledged can be finished in that time, the commands under way in the process (every
adapter's) are bounded by how fast they get done (:class:`Backlog`): one more than the bot could
finish within the grace is answered that tallybot is busy (``BUSY``), not carried out;
but a little room beyond that is kept for the places (servers, workspaces, chats) with only a few
commands under way, so that a flood from one place never gets another's members told "busy".
A command with no room waits for some, briefly (``ADMIT_WAIT_S``, before it is acknowledged:
within the 3 s the platforms give), in the order commands came (:meth:`Backlog.admit`): as
commands finish, and once their pace is measured (right after a start, a second flood that
comes before any of the first is answered is not told "busy" for want of a measure).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Iterator
from types import TracebackType
from typing import Any

from bot.commands.request import FAILED, Reply

log = logging.getLogger(__name__)

GRACE_S = 7.0
"""How long leaving waits for the commands acknowledged to be answered before cancelling them
(``bot.runtime.run.STOP_GRACE`` leaves room for it)."""

Answer = Callable[[Reply], Awaitable[object]]
FLOOR = 100
"""Commands under way that are always taken (100 members typing at once are all answered)."""
PLACE_FLOOR = 20
"""Commands under way from one place (a server, a workspace, a chat) that are taken beyond
the bound, into ``RESERVE``: another place's flood never gets a place's few answered busy."""
RESERVE = 50
"""Room beyond the bound kept for places with fewer than ``PLACE_FLOOR`` under way."""
RATE_WINDOW_S = 10.0
"""How far back the pace of finished commands is measured."""
SAMPLES = 10
"""Commands finished within the window before their pace is trusted (until then: ``FLOOR``)."""
MARGIN = 0.8
"""The share of the grace the commands taken may need at the pace measured."""
ADMIT_WAIT_S = 1.0
"""How long a command with no room under the bound waits for some before it is answered busy
(it is not acknowledged meanwhile: Discord and Slack take 3 s)."""
BUSY = Reply(
    "Error: tallybot is busy with other commands just now; try again in a minute.", ok=False
)
"""The answer to a command that was not taken (``Backlog``), at once."""


class Backlog:
    """The commands under way in this process (acknowledged, not finished), and how fast they
    get finished. Another is taken while all of them could be finished within ``grace``
    seconds (``MARGIN`` of it) at the pace measured (always up to ``floor``); and, while its
    place (server, workspace, chat) has fewer than ``place_floor`` under way, up to ``reserve``
    more: a flood from one place fills the bound but never that reserve, so the members of
    other places are not told "busy" because of it (and all in all no more than the bound and
    the reserve are ever under way).

    The pace is the commands finished in the last ``RATE_WINDOW_S`` over the time within it
    that commands were under way, counted from the first to finish of each spell (the time
    that one took is how long a command takes, not how many a second): what the bot can do,
    not what it was asked (a quiet hour before a burst does not make the burst look slow);
    ``SAMPLES`` are needed to trust it.

    :meth:`admit`: a command with no room waits for some, for ``ADMIT_WAIT_S`` at most, in the
    order they came within its place (another place with room does not wait behind it)."""

    def __init__(
        self,
        grace: float = GRACE_S,
        floor: int = FLOOR,
        place_floor: int = PLACE_FLOOR,
        reserve: int = RESERVE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.grace = grace
        self.floor = floor
        self.place_floor = place_floor
        self.reserve = reserve
        self.monotonic = monotonic
        self.open = 0
        self._places: Counter[Hashable] = Counter()
        self._finished: deque[float] = deque()
        self._busy: deque[tuple[float, float]] = deque()
        """The spells (first finish, end) when commands were under way, the current one
        excepted."""
        self._busy_since: float | None = None
        """The first finish of the current spell."""
        self._waiting: deque[tuple[Hashable, asyncio.Future[None]]] = deque()
        """Commands waiting for room (:meth:`admit`), in the order they came."""
        self._waiting_in: Counter[Hashable] = Counter()
        self._promised = 0
        """Waiters let in whose commands have not opened yet."""

    def pace(self) -> float | None:
        """Commands finished a second while some were under way, lately (None: too few)."""
        now = self.monotonic()
        since = now - RATE_WINDOW_S
        while self._finished and self._finished[0] < since:
            self._finished.popleft()
        while self._busy and self._busy[0][1] < since:
            self._busy.popleft()
        spells = [*self._busy]
        if self._busy_since is not None:
            spells.append((self._busy_since, now))
        busy = sum(end - max(start, since) for start, end in spells)
        if len(self._finished) < SAMPLES or busy <= 0:
            return None
        return len(self._finished) / busy

    def bound(self) -> int:
        """How many commands may be under way in all."""
        pace = self.pace()
        return self.floor if pace is None else max(self.floor, int(pace * self.grace * MARGIN))

    def room(self, where: Hashable) -> bool:
        """Whether one more command from ``where`` (its place) may be taken now."""
        bound = self.bound()
        if self._places[where] < self.place_floor:
            bound += self.reserve
        return self.open + self._promised < bound

    async def admit(self, where: Hashable, wait: float = ADMIT_WAIT_S) -> bool:
        """Whether a command from ``where`` may be taken: at once if there is room and none of
        its place waits; else once room comes, for ``wait`` seconds at most (False: busy).
        Open its :class:`Place` right after, before awaiting anything."""
        if not self._waiting_in[where] and self.room(where):
            return True
        if wait <= 0:
            return False
        entry = (where, asyncio.get_running_loop().create_future())
        self._waiting.append(entry)
        self._waiting_in[where] += 1
        try:
            await asyncio.wait([entry[1]], timeout=wait)
        finally:
            if entry[1].done():
                self._promised -= 1
            else:
                entry[1].cancel()
                self._waiting.remove(entry)
                self._forget(where)
                self._let_in()  # the ones behind it may have room
        return not entry[1].cancelled()

    def _forget(self, where: Hashable) -> None:
        self._waiting_in[where] -= 1
        if not self._waiting_in[where]:
            del self._waiting_in[where]

    def _let_in(self) -> None:
        """Let the waiters in that have room, in the order they came (per place)."""
        blocked: set[Hashable] = set()
        for entry in list(self._waiting):
            where, waiter = entry
            if where in blocked:
                continue
            if not self.room(where):
                blocked.add(where)
                continue
            self._waiting.remove(entry)
            self._forget(where)
            self._promised += 1
            waiter.set_result(None)

    def opened(self, where: Hashable) -> None:
        self.open += 1
        self._places[where] += 1

    def closed(self, where: Hashable) -> None:
        now = self.monotonic()
        self.open -= 1
        self._places[where] -= 1
        if not self._places[where]:
            del self._places[where]
        if self._busy_since is None:  # the spell's first: its time is a command's, not a pace
            self._busy_since = now
        else:
            self._finished.append(now)
        if self.open == 0:
            self._busy.append((self._busy_since, now))
            self._busy_since = None
        if self._waiting:
            self._let_in()


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


class Place:
    """One command's place in its member's line (:meth:`InOrder.place`): ``async with`` waits
    for the commands before it, and gives the turn to the next one when the block ends.
    :meth:`leave` (for a command that ends without entering) may be called any time, more than
    once."""

    def __init__(
        self,
        before: asyncio.Future[None] | None,
        mine: asyncio.Future[None],
        backlog: Backlog,
        where: Hashable,
    ) -> None:
        self._before = before
        self._mine = mine
        self._backlog = backlog
        self._where = where
        self._left = False
        backlog.opened(where)

    async def __aenter__(self) -> None:
        try:
            if self._before is not None and not self._before.done():
                await asyncio.shield(self._before)
        except BaseException:
            self.leave()
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.leave()

    def leave(self) -> None:
        """The next command may go once those before this one are done."""
        before, mine = self._before, self._mine
        if self._left:
            return
        self._left = True
        self._backlog.closed(self._where)
        if before is None or before.done():
            mine.set_result(None)
        else:  # cancelled while waiting: the next still waits for the ones before

            def after(_: asyncio.Future[None]) -> None:
                if not mine.done():
                    mine.set_result(None)

            before.add_done_callback(after)


class InOrder:
    """Per key (a member in a channel), commands one after the other in the order they arrived
    (see the module docstring); nothing is kept of a key whose commands are done."""

    def __init__(self, backlog: Backlog | None = None) -> None:
        """``backlog``: the commands under way in the app (its adapters share its store, and so
        the pace its commands go at: ``bot.platform.Context.backlog``); one of its own if
        none."""
        self.backlog = backlog if backlog is not None else Backlog()
        self._last: dict[Hashable, asyncio.Future[None]] = {}

    def place(self, key: Hashable, where: Hashable) -> Place:
        """The place of a command that has just arrived (take it before awaiting anything),
        from ``where`` (its server, workspace or chat: :meth:`Backlog.room`)."""
        before = self._last.get(key)
        mine: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._last[key] = mine

        def forget(done: asyncio.Future[None]) -> None:
            if self._last.get(key) is done:
                del self._last[key]

        mine.add_done_callback(forget)
        return Place(before, mine, self.backlog, where)

    def room(self, where: Hashable) -> bool:
        """Whether another command from ``where`` may be taken now (:class:`Backlog`)."""
        return self.backlog.room(where)

    async def admit(self, where: Hashable) -> bool:
        """Whether another command from ``where`` may be taken, waiting briefly for room
        (:meth:`Backlog.admit`); take its place right after."""
        return await self.backlog.admit(where)

    def __len__(self) -> int:
        """Members with commands under way."""
        return len(self._last)


class InFlight:
    """The tasks answering commands (see the module docstring)."""

    def __init__(self, grace: float = GRACE_S, *, backlog: Backlog | None = None) -> None:
        """``backlog``: see :class:`InOrder`."""
        self.grace = grace
        self.order = InOrder(backlog)
        """One member's commands, in the order they arrived."""
        self.accepting = True
        """False once the bot is stopping: a command arriving now is not acknowledged."""
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

    async def run(
        self, what: str, work: Awaitable[None], answer: Answer, *, place: Place | None = None
    ) -> None:
        """:func:`guarded`, tracked; in ``place`` (its member's turn), when given."""
        with self.tracked():
            if place is None:
                await guarded(what, work, answer)
                return
            try:
                async with place:
                    await guarded(what, work, answer)
            finally:
                place.leave()

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
        """Take no more commands; let those acknowledged be answered, for the grace period;
        cancel what is left."""
        self.accepting = False
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=self.grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
