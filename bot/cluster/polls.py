"""Each count polled by one instance at a time: the holder of its lease (``poll:COUNT``).

Every instance schedules every count; when a count's turn comes, the instance polls it only if
it holds the count's lease. The leases are taken and renewed in batches, one statement for many
counts, never a store write per poll:

* a count whose lease this instance holds is polled at once. Every :data:`RENEW_EVERY_S` a
  batch renews the leases due (``bot.cluster.lease``: a third of their life past) of the counts
  held whose turn came within their lease's length (so a turn that comes late, on a busy
  instance, does not lose the lease; a count no longer polled here is no longer renewed);
* a count whose lease it does not hold (not yet, or another instance's) waits for the next
  batch, which tries to take it, and is polled if that succeeds. The first such turn after a
  while (the instance's first polls, a count new to it) has the batch made at once, with every
  count not yet tried in it: at start the instance tries for all its counts in one statement,
  and a count whose turn comes while that batch is under way polls as soon as it ends (the
  first polls are spread over the interval: they do not wait a batch more).

A lease lasts the count's interval plus :data:`LEASE_SLACK_S` from its last renewal, so a
holder that stops renewing (it died) loses it that long after its last poll, and the next
instance whose turn comes takes it: polling resumes within two intervals plus 10 s. An
instance polls only while its lease is held by its own clock (:class:`~bot.cluster.lease.Lease`),
so one that stalled past it stops. A turn waits for its batch at most the count's interval (by
the event loop's time): a store that does not answer skips the turn (the count is not polled),
it never holds the count's polls up longer than that.
Tallies are stored once whichever instance reads them (each is compared with the last one
stored, and ``(count, seq)`` is unique). On SQLite there is one instance and no lease.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.base.clock import Clock, Later, Sleep, call_later
from bot.cluster.identity import Instance
from bot.cluster.lease import Holder, Lease, shared
from bot.errors import StoreError
from bot.store import Database

LEASE_SLACK_S = 5.0
"""How long past its count's interval a poll lease lasts (for a slow poll, a busy store)."""
RENEW_EVERY_S = 1.0
"""How long the leases of the counts polled wait to be renewed together, at most."""

log = logging.getLogger(__name__)

Poll = Callable[[], Awaitable[object]]


def lease_name(count_id: str) -> str:
    return f"poll:{count_id}"


class PollLeases:
    """Guards each count's poll with its lease (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        instance: Instance,
        *,
        renew_every: float = RENEW_EVERY_S,
        sleep: Sleep = asyncio.sleep,
        later: Later = call_later,
    ) -> None:
        """``sleep``: the wait between batches (``renew_every``); one that returns at once (a
        test's) makes them back to back while anything is held. ``later``: ends a turn's wait
        for its batch after the count's interval (the loop's ``call_later``)."""
        self.db = db
        self.clock = clock
        self.instance = instance
        self.shared = shared(db)
        self.renew_every = renew_every
        self.sleep = sleep
        self.later = later
        self.holder = Holder(db, instance.id, clock)
        self.leases: dict[str, Lease] = {}
        """The counts whose lease this instance took (held while :attr:`Lease.held`)."""
        self._intervals: dict[str, float] = {}
        """Every count guarded, and its interval."""
        self._untried: set[str] = set()
        """Counts guarded whose lease no batch has tried yet."""
        self._due: set[str] = set()
        """Counts whose lease the next batch takes (or renews)."""
        self._turned: dict[str, float] = {}
        """When each count's turn last came (the clock's monotonic seconds)."""
        self._hurry = asyncio.Event()
        self._next: asyncio.Future[None] | None = None
        """Done when the next batch is."""
        self._taking: tuple[set[str], asyncio.Future[None]] | None = None
        """The batch under way: the counts whose leases it takes, and done when it is (a turn
        of one of them waits for it, not for the batch after)."""
        self._batches: asyncio.Task[None] | None = None

    def guard(self, count_id: str, interval: float, poll: Poll) -> Poll:
        """``poll``, run only while this instance holds the count's lease."""
        if not self.shared:
            self.instance.counts.add(count_id)
            return poll
        self._intervals[count_id] = interval
        self._untried.add(count_id)

        async def leased() -> object:
            if not await self.hold(count_id):
                return None
            return await poll()

        return leased

    def holds(self, count_id: str) -> bool:
        """Whether this instance holds the count's lease now, by its own clock (on SQLite, the
        one instance always does)."""
        if not self.shared:
            return True
        lease = self.leases.get(count_id)
        return lease is not None and lease.held

    async def hold(self, count_id: str) -> bool:
        """The count's turn: whether this instance holds its lease (renewed in the next batch),
        or, if it did not, whether the next batch took it within the count's interval."""
        self._turned[count_id] = self.clock.monotonic()
        if self.holds(count_id):
            self._start()
            return True
        if self._taking is not None and count_id in self._taking[0]:
            done = self._taking[1]
        else:
            done = self._want(count_id, soon=count_id in self._untried)
        if not await self._within(done, self._intervals[count_id]):
            log.warning(
                "the poll leases were not taken within the count's interval: turn skipped",
                extra={"count": count_id},
            )
            return False
        return self.holds(count_id)

    async def _within(self, done: asyncio.Future[None], seconds: float) -> bool:
        """Whether ``done`` is done within ``seconds`` (``later``); it is never cancelled."""
        if done.done():
            return True
        waited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def end() -> None:
            if not waited.done():
                waited.set_result(None)

        timer = self.later(seconds, end)  # called off once done: no timer left per turn
        try:
            await asyncio.wait({done, waited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()
            end()
        return done.done()

    def _want(self, count_id: str, *, soon: bool) -> asyncio.Future[None]:
        self._due.add(count_id)
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        self._start()
        if soon:
            self._hurry.set()
        return self._next

    def _start(self) -> None:
        if self._batches is None or self._batches.done():
            self._batches = asyncio.create_task(self._run(), name="poll leases")

    def _renewable(self) -> set[str]:
        """The counts held whose turn came within their lease's length and whose lease is due
        (renewed every few seconds, not at every batch)."""
        mono = self.clock.monotonic()
        return {
            c
            for c, lease in self.leases.items()
            if mono - self._turned.get(c, mono) <= lease.seconds and lease.due
        }

    async def _run(self) -> None:
        """Batches, while any lease is due or held: at once when hurried, else every
        ``renew_every`` (none when nothing is due or renewable)."""
        while self._due or self.leases:
            await self._pause()
            self._hurry.clear()
            due, self._due = self._due | self._renewable(), set()
            if not due:
                continue
            if due & self._untried:
                due |= self._untried
            self._untried -= due
            done, self._next = self._next, None
            if done is None:
                done = asyncio.get_running_loop().create_future()
            self._taking = (due, done)
            try:
                await self._take(due)
            finally:
                self._taking = None
                done.set_result(None)

    async def _pause(self) -> None:
        """Until hurried, or ``renew_every`` has passed."""
        if self._hurry.is_set():
            return
        hurried = asyncio.create_task(self._hurry.wait())
        slept = asyncio.ensure_future(self.sleep(self.renew_every))
        try:
            await asyncio.wait({hurried, slept}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            hurried.cancel()
            slept.cancel()
            await asyncio.gather(hurried, slept, return_exceptions=True)

    async def _take(self, due: set[str]) -> None:
        """Take or renew the leases of ``due`` in one statement (a store that does not answer:
        none taken or renewed this time)."""
        wanted = {c: self.leases.get(c) or self._lease(c) for c in due}
        try:
            taken = await self.holder.take(wanted.values())
        except StoreError as exc:
            log.warning("cannot renew the poll leases: %s", exc)
            return
        for count_id in sorted(due):
            if lease_name(count_id) in taken:
                self.leases[count_id] = wanted[count_id]
                if count_id not in self.instance.counts:
                    log.info("polling this count now", extra={"count": count_id})
                    self.instance.counts.add(count_id)
            elif count_id in self.instance.counts:
                log.info("another instance polls this count now", extra={"count": count_id})
                self.instance.counts.discard(count_id)
                self.leases.pop(count_id, None)
            else:
                self.leases.pop(count_id, None)

    def _lease(self, count_id: str) -> Lease:
        seconds = self._intervals[count_id] + LEASE_SLACK_S
        return Lease(lease_name(count_id), seconds, self.clock)

    async def release_all(self) -> None:
        """Stop taking leases and hand every one this instance holds on at once (a clean
        stop)."""
        if not self.shared:
            return
        if self._batches is not None:
            self._batches.cancel()
            await asyncio.gather(self._batches, return_exceptions=True)
        if self._next is not None:
            self._next.set_result(None)
        if self._taking is not None and not self._taking[1].done():
            self._taking[1].set_result(None)
        held = [self.leases.get(c) or self._lease(c) for c in self.instance.counts]
        try:
            await self.holder.hand_back(held)
        except StoreError as exc:
            log.warning("cannot hand the poll leases on: %s", exc)
        self.instance.counts.clear()
        self.leases.clear()
