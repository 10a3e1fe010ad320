"""Which gateway shards this instance runs, and when a shard may start its session.

A platform whose gateway is sharded (Discord) runs each shard's session in one instance at a
time. On PostgreSQL the instances divide the shards through leases (``shard:N``, table
``leases``): each round (a third of ``lease_seconds``) an instance renews its own presence
(``shards:ID``) and the leases of its shards, counts the instances present, and holds its share:
``ceil(free shards / instances)``. Over its share, it hands the last ones' leases on, and says
so (``NOTIFY``, :mod:`bot.store.notices`: the others run a round at once); under it, it takes
free ones (never renewed: their holder died, or handed them on). A dead instance's
shards are free ``lease_seconds`` after its last round, and taken over at the next round of a
survivor: within ``lease_seconds`` plus a third of it.

A shard handed on (over the share, or the instance stops: :meth:`ShardLeases.hand_over_all`),
and a shard whose lease this instance lost (it could not renew it in time: another instance
took it, or the store did not answer), keeps its session here until the new holder's session is
up, so that its guilds are never without one: an instance marks the shards whose sessions are
up (``up:N``, held by it) at each round and at once when a session comes up (:meth:`wake`), and
the old holder stops its session once ``up:N`` and ``shard:N`` name the same new holder (or
after ``HANDOVER_S``). For that short overlap both sessions get the guilds' events; an
interaction is still carried out once, by the session whose acknowledgement Discord accepts
(the other's is refused as already acknowledged: ``adapters.discord.commands``).
``Instance.shards`` (``/healthz``) lists a shard only while its session here is up.

Each shard's lease is a :class:`~bot.cluster.lease.Lease`: held by its own expiry, not by one
round's success. A round that fails or stalls (a busy store, a busy process) keeps the sessions
while their leases are held, and the next round comes before they lapse; a round waits for the
store at least a round's time, even when the leases are about to lapse (a round woken late by a
busy process still renews them, instead of giving them up unasked).

``shard_ids`` fixes the shards of an instance: it holds their leases when they are free, and
takes no part in the division. On SQLite (one instance) there is no lease: it runs them all.

:class:`SessionStarts`: a platform lets so many sessions start per window (Discord:
``max_concurrency`` per 5 s, in buckets ``shard % max_concurrency``); across instances each
bucket is a budget shared in the store (``bot.delivery.shared``), in one instance a limiter.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.base.clock import Clock, Sleep
from bot.cluster.identity import Instance
from bot.cluster.lease import Holder, Lease, shared
from bot.cluster.turns import SharedTurns
from bot.delivery.pacing import Window
from bot.delivery.ratelimit import RateLimiter
from bot.errors import StoreError
from bot.store import Database, buckets, leases, notices

log = logging.getLogger(__name__)

SHARD = "shard:"
MEMBER = "shards:"
UP = "up:"
Change = Callable[[int], Awaitable[None]]
HANDOVER_S = 60.0
"""The longest a shard handed on keeps its session here while its new holder's does not come
up (it failed to start: the guilds need a session; rounds settle who runs it)."""
STOP_HANDOVER_S = 6.0
"""The longest a stopping instance waits for the new holders' sessions of its shards, its own
sessions answering commands meanwhile: a new session is up within a round, one identify turn
(Discord: 5 s a bucket) and the READY; at most this, so that the commands acknowledged at its
end still have 3.5 s of the stop's 9.5 (``bot.runtime.run.STOP_GRACE``) when no other instance
takes them (the whole fleet stopping); a shard not taken by then is taken at the next round, as
after a kill."""
HANDOVER_POLL_S = 0.2
STOP_TAKEN_S = 2.0
"""How long a stopping instance waits for another to take its shards at all: a live one takes
them at once (told by NOTIFY); one whose presence outlives it (killed, its lease not yet
expired) never will, and the stop does not wait the rest of ``STOP_HANDOVER_S`` for it."""


def shard_lease(shard: int) -> str:
    return f"{SHARD}{shard}"


class ShardLeases:
    """This instance's shards among ``count`` (see the module docstring)."""

    def __init__(
        self,
        db: Database | None,
        clock: Clock,
        instance: Instance,
        *,
        count: int,
        fixed: tuple[int, ...] | None = None,
        lease_seconds: float = 30.0,
    ) -> None:
        self.db = db
        self.clock = clock
        self.instance = instance
        self.count = count
        self.fixed = fixed
        self.lease_seconds = lease_seconds
        self.every = lease_seconds / 3
        """How often a round runs."""
        self.shared = shared(db)
        self.holder = Holder(db, instance.id, clock) if db is not None else None
        self._leases: dict[str, Lease] = {}
        self.up: Callable[[int], bool] = lambda shard: True
        """Whether the session of a shard run here is up (the adapter's; set before rounds)."""
        self.held: set[int] = set()
        self._handing_on: set[int] = set()
        """Shards over this instance's share: their leases go at the end of the round."""
        self.serving: dict[int, float] = {}
        """Shards handed on whose sessions still run here, with when they were handed on."""
        self._let_go: set[int] = set()
        """Handed-on shards whose new holder's session is up (read in the round)."""
        self._marked: set[int] = set()
        """The shards this instance marked up (``up:N``) at its last round."""
        self._woken = asyncio.Event()
        """Set by :meth:`wake`: the next round runs now."""
        self._stepping = asyncio.Lock()
        self._left = False
        """Every shard handed over (:meth:`release_all`): no more rounds."""

    def _store(self) -> Holder:
        """This instance as the holder of its shards' leases (a shared store only)."""
        assert self.holder is not None
        return self.holder

    def _lease(self, name: str) -> Lease:
        lease = self._leases.get(name)
        if lease is None:
            lease = self._leases[name] = Lease(name, self.lease_seconds, self.clock)
        return lease

    def left(self) -> float:
        """How long the leases of the shards held here last without a renewal (0: none held)."""
        return min((self._lease(shard_lease(s)).left() for s in self.held), default=0.0)

    @property
    def wanted(self) -> tuple[int, ...]:
        return self.fixed if self.fixed is not None else tuple(range(self.count))

    async def step(self, start: Change, stop: Change, let_go: Change | None = None) -> None:
        """One round: ``stop`` the shards lost (first), hand on those over the share (their
        sessions run on here), ``start`` those gained, and ``let_go`` (default ``stop``) the
        handed-on ones whose new holder's session is up."""
        async with self._stepping:  # one round at a time (a woken round, a caller's)
            if not self._left:  # handed everything over: it takes nothing more
                await self._step(start, stop, let_go or stop)

    async def _step(self, start: Change, stop: Change, let_go: Change) -> None:
        gained, lost = await self.round()
        for shard in sorted(lost - self._handing_on):
            if self.up(shard):  # its guilds keep a session until the new holder's is up
                log.info(
                    "shard %d: its lease is lost: served here until another instance's session "
                    "is up",
                    shard,
                    extra={"shard": shard},
                )
                self.serving.setdefault(shard, self.clock.monotonic())
            else:
                log.info("shard %d: another instance runs it now", shard, extra={"shard": shard})
                await stop(shard)
        await self._hand_on()
        for shard in sorted(gained):
            if self.serving.pop(shard, None) is not None:
                continue  # taken back while its session still ran here: it runs on
            log.info("shard %d: this instance runs it now", shard, extra={"shard": shard})
            await start(shard)
        now = self.clock.monotonic()
        for shard, since in sorted(self.serving.items()):
            if shard in self._let_go or now - since > HANDOVER_S:
                log.info("shard %d: handed over", shard, extra={"shard": shard})
                del self.serving[shard]
                await let_go(shard)
        self.publish()

    def publish(self) -> None:
        """``Instance.shards``: the shards whose sessions run here and are up."""
        self.instance.shards = {s for s in self.held | set(self.serving) if self.up(s)}

    async def run(
        self,
        start: Change,
        stop: Change,
        let_go: Change | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """Rounds until cancelled (the first one is the caller's: :meth:`step`): one when the
        next is due (:meth:`next_in`), or at once when woken (:meth:`wake`)."""
        told = asyncio.create_task(self._told(), name="shards-handed-on") if self.shared else None
        try:
            while True:
                await self._pause(self.next_in(), sleep)
                await self.step(start, stop, let_go)
        finally:
            if told is not None:  # its connection closed before the rounds end
                told.cancel()
                await asyncio.wait({told})

    async def _told(self) -> None:
        """Wake a round whenever an instance says it handed shards on (PostgreSQL ``NOTIFY``),
        so that the others take them at once, not at their next round: a stopping instance
        waits for their new sessions (:meth:`hand_over_all`)."""
        assert self.db is not None
        name = notices.channel(self.db.schema, notices.SHARDS)
        while True:
            try:
                async with self.db.listening(name, self._heard) as listening:
                    await listening.lost
            except StoreError as exc:  # the rounds go on; listen again a round later
                log.warning("cannot hear shards handed on: %s", exc)
            await asyncio.sleep(self.every)

    def wake(self) -> None:
        """Run the next round now: a session came up here (its mark tells an instance handing
        the shard over that it may let its own go)."""
        self._woken.set()

    async def _pause(self, seconds: float, sleep: Sleep) -> None:
        napping = asyncio.ensure_future(sleep(seconds))
        woken = asyncio.ensure_future(self._woken.wait())
        try:
            await asyncio.wait({napping, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            napping.cancel()
            woken.cancel()
        self._woken.clear()

    def next_in(self) -> float:
        """When the next round is due: a third of the lease after this one, sooner when the
        leases held would lapse before (a round that failed or stalled); unshared, no lease
        lapses."""
        return min(self.every, self.left()) if self.held and self.shared else self.every

    async def round(self) -> tuple[set[int], set[int]]:
        """Renew, hand on and take leases: the shards gained and lost since the last round."""
        if not self.shared:
            return self._now_held(set(self.wanted))
        assert self.db is not None
        # While shards are held, the store is waited for as long as their leases last (a slow
        # round keeps them), and at least a round's time: a round woken late (a busy process)
        # still renews them rather than giving them up unasked.
        limit = max(self.left(), self.every)
        renewed: set[int] | None = None
        try:
            async with asyncio.timeout(limit):
                renewed = await self._renew()  # committed first: what fails after keeps it
                async with self._store().transaction() as conn:
                    held = await self._divide(conn, renewed)
        except (StoreError, TimeoutError) as exc:
            self._handing_on = set()  # nothing was handed on: those still run here
            self._let_go = set()
            if renewed is not None:
                log.warning("shard leases renewed, but cannot divide the shards now: %r", exc)
                return self._now_held(renewed)
            if self.left() > 0:  # the next round comes before they lapse (next_in)
                log.warning(
                    "cannot renew the shard leases (kept %.1f s more): %r", self.left(), exc
                )
                return set(), set()
            log.warning(
                "cannot renew the shard leases: their sessions run on until another instance's "
                "are up: %r",
                exc,
            )
            return self._now_held(set())
        return self._now_held(held)

    async def _renew(self) -> set[int]:
        """Renew this instance's presence and its shards' leases, in one statement of its own:
        the shards still held."""
        renewing = [self._lease(shard_lease(s)) for s in self.held]
        if self.fixed is None:
            renewing.append(self._lease(f"{MEMBER}{self.instance.id}"))
        taken = await self._store().take(renewing)
        return {s for s in self.held if shard_lease(s) in taken}

    async def _divide(self, conn: AsyncConnection, renewed: set[int]) -> set[int]:
        """Mark the sessions up, then hand on the shards over this instance's share and take
        free ones under it: the shards held."""
        me = self.instance.id
        now = self.clock.now()
        held = set(renewed)
        await self._mark_up(conn, held)
        if self.fixed is None:
            # one statement for the presences (shards:ID) and the shards' leases (shard:N)
            live = {
                name: holder
                for name, (holder, expires) in (await leases.holders(conn, "shard")).items()
                if expires >= now
            }
            members = {n.removeprefix(MEMBER) for n in live if n.startswith(MEMBER)}
            mine = {shard_lease(s) for s in self.wanted}  # not another shard count's leftovers
            others = {n: h for n, h in live.items() if h != me and n in mine}
            fixed_elsewhere = sum(1 for holder in others.values() if holder not in members)
            share = math.ceil(max(0, self.count - fixed_elsewhere) / max(1, len(members)))
        else:
            others = {}
            share = len(self.fixed)
        self._handing_on = set(sorted(held, reverse=True)[: max(0, len(held) - share)])
        held -= self._handing_on
        for shard in self.wanted:
            if len(held) >= share:
                break
            if shard in held or shard_lease(shard) in others:
                continue
            if await self._store().take([self._lease(shard_lease(shard))], conn):
                held.add(shard)
        return held

    async def _mark_up(self, conn: AsyncConnection, held: set[int]) -> None:
        """Mark the held shards whose sessions are up (``up:N``), unmark the others; read which
        handed-on shards' new holders have theirs up (``_let_go``)."""
        me = self.instance.id
        up = {s for s in held if self.up(s)}
        if up:
            await self._store().take([self._lease(f"{UP}{s}") for s in up], conn)
        if self._marked - up:  # one statement less in most rounds (a busy store times out)
            await leases.release_many(conn, [f"{UP}{s}" for s in self._marked - up], me)
        self._marked = up
        self._let_go = set()
        if self.serving:
            marks = await leases.holders(conn, UP)
            owners = await leases.holders(conn, SHARD)
            for shard in self.serving:
                mark, owner = marks.get(f"{UP}{shard}"), owners.get(shard_lease(shard))
                if mark is not None and owner is not None and mark[0] == owner[0] != me:
                    self._let_go.add(shard)

    async def _hand_on(self) -> None:
        """Release the leases of the shards over the share; their sessions run on here until
        the new holder's are up (:meth:`step`)."""
        handing, self._handing_on = self._handing_on, set()
        if not handing or self.db is None:
            return
        now = self.clock.monotonic()
        try:
            await self._hand_back(self._named(handing))
        except StoreError as exc:  # they run out by themselves
            log.warning("cannot hand shards on: %s", exc)
        for shard in handing:
            log.info("shard %d: handed on", shard, extra={"shard": shard})
            self.serving[shard] = now

    def _heard(self, by: str) -> None:
        if by != self.instance.id:  # another instance handed shards on
            self.wake()

    async def _hand_back(self, given: list[Lease]) -> None:
        """Hand ``given`` back and say so to the other instances (:meth:`_told`)."""
        assert self.db is not None
        async with self._store().transaction() as conn:
            await self._store().hand_back(given, conn=conn)
            await notices.shards_handed_on(conn, self.db.schema, self.instance.id)

    def _named(self, shards: set[int]) -> list[Lease]:
        """The leases of ``shards`` and their marks."""
        return [self._lease(n) for s in sorted(shards) for n in (shard_lease(s), f"{UP}{s}")]

    def _now_held(self, held: set[int]) -> tuple[set[int], set[int]]:
        gained, lost = held - self.held, self.held - held
        self.held = held
        self.publish()
        return gained, lost

    async def release_all(self) -> None:
        """Hand every shard on at once (a clean stop), and this instance's presence."""
        held, self.held = self.held | set(self.serving), set()
        self.serving = {}
        self._left = True
        self.instance.shards = set()
        if not self.shared or self.db is None:
            return
        me = self.instance.id
        try:
            await self._hand_back([*self._named(held), self._lease(f"{MEMBER}{me}")])
        except StoreError as exc:
            log.warning("cannot hand the shards on: %s", exc)

    async def hand_over_all(self, stop: Change, *, limit: float = STOP_HANDOVER_S) -> None:
        """A clean stop: hand every shard on and keep its session until its new holder's is up
        (at most ``limit`` seconds, looking every ``HANDOVER_POLL_S``; not at all when no other
        instance is there to take it, no longer than ``STOP_TAKEN_S`` when none takes it),
        then ``stop`` it."""
        running = sorted(self.held | set(self.serving))
        await self.release_all()
        if not self.shared or self.db is None:
            for shard in running:
                await stop(shard)
            return
        waiting, me = set(running), self.instance.id
        loop = asyncio.get_running_loop()  # real seconds: the sessions run in real time
        began = loop.time()
        while waiting and loop.time() - began < limit:
            await asyncio.sleep(HANDOVER_POLL_S)
            try:
                async with self._store().transaction() as conn:
                    marks = await leases.holders(conn, UP)
                    rows = await leases.holders(conn, SHARD.rstrip(":"))  # and the presences
            except StoreError as exc:
                log.warning("cannot see the shards handed on: %s", exc)
                break
            now = self.clock.now()
            owners = {n: h for n, h in rows.items() if n.startswith(SHARD)}
            if not any(holder != me and expires >= now for holder, expires in rows.values()):
                break  # no other instance is there to take them (the whole fleet stopping)
            taken = False
            for shard in sorted(waiting):
                mark, owner = marks.get(f"{UP}{shard}"), owners.get(shard_lease(shard))
                taken = taken or (owner is not None and owner[0] != me)
                if mark is not None and owner is not None and mark[0] == owner[0] != me:
                    waiting.discard(shard)
                    await stop(shard)
            if waiting and not taken and loop.time() - began >= STOP_TAKEN_S:
                break  # nobody takes them: the others there are stopping or dead
        for shard in running:
            await stop(shard)


IDENTIFY_WINDOW = Window(1, 5.0)
"""One session start per bucket every 5 seconds (Discord: ``max_concurrency`` buckets)."""


class SessionStarts:
    """When a shard may start (identify) its session: one start per ``window`` in each of
    ``buckets`` buckets (``shard % buckets``), shared by every instance of a PostgreSQL store
    (the budget ``NAME:identify:BUCKET``)."""

    def __init__(
        self,
        name: str,
        buckets_: int,
        clock: Clock,
        db: Database | None,
        *,
        sleep: Sleep = asyncio.sleep,
        window: Window = IDENTIFY_WINDOW,
    ) -> None:
        self.buckets = max(1, buckets_)
        self.clock = clock
        self.sleep = sleep
        self.db = db
        self.started = 0
        self._shared = [
            SharedTurns(f"{name}:identify:{b}", window, clock, sleep, self._reserve)
            for b in range(self.buckets)
        ]
        self.window = window
        self._local = [
            RateLimiter(window.limit, window.seconds, clock, margin=0.1) for _ in self._shared
        ]
        self.shared = shared(db)

    async def turn(self, shard: int) -> None:
        """Wait until ``shard`` may start its session."""
        bucket = shard % self.buckets
        if self.shared:
            try:
                await self._shared[bucket].turn()
            except StoreError as exc:  # this instance's own limiter, with one start's margin
                log.warning("cannot reserve a session start (%s): waiting a window", exc)
                await self.sleep(self.window.seconds)
                await self._local_turn(bucket)
        else:
            await self._local_turn(bucket)
        self.started += 1

    async def _local_turn(self, bucket: int) -> None:
        async with self._local[bucket].slot(self.sleep):
            pass

    async def _reserve(self, name: str, turns: int, every: float) -> float:
        assert self.db is not None
        async with self.db.begin() as conn:
            return await buckets.reserve(conn, name, turns=turns, every=every)
