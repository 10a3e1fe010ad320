"""One rate budget per bot across every instance on a PostgreSQL store.

A platform-wide bucket (Discord's 50 requests a second per bot; a Slack method's rate per
workspace) is the bot's, not the process's. The platform counts requests when they *arrive*,
which no instance can see for another's requests: turns spaced by their starts across processes
get bunched on the way (a busy process, a busy network or server) and draw 429s unless spaced
with a wide margin. So the whole budget of a platform is leased to one instance at a time
(:class:`SendingLease`, the lease ``send:PLATFORM:KEY`` in ``leases``, where KEY is a
fingerprint of the bot's credentials, so two bots on one database do not share it). Only the
holder claims and sends that platform's deliveries, pacing each request by its own limiter,
which counts a request's window from its *response* (``bot.delivery.ratelimit``): exact, at the
full rate. The other instances stand by: one takes the lease over when its holder stops
renewing it (it died) or hands it back once it has nothing left to send, a window after its
last request, so that the next holder starts with the window clear.

A 429 the platform answered for a platform-wide bucket holds the bucket's row
(``bot.store.buckets``) for every instance (:class:`SharedBudget`): the next holder waits it
out too.

Requests that no pacer counts count against the same limit: every instance's start-up (the
client's login, the gateway's facts, the command sync, each shard's login) and the replies that
draw from it (a follow opening the member's DM channel), made by its client library while
another instance may be sending at full pace. So a bucket is split into two fixed shares
(``Bucket.reserved``): the holder paces the larger (``Limits.for_holder``: 47 of Discord's 50 a
second), and every request made outside a pacer, in any instance, takes a turn of the reserved
3 (:class:`OutsideShare`), spaced among the instances through the store as session starts are
(``bot.cluster.turns``). (Asking the holder for a slot through the store instead would make
every start-up wait for the holder's next look at the store, and stall when it dies.) Answers
to commands are not counted: interaction callbacks and follow-ups are outside Discord's global
limit.

The arithmetic, for any second: the holder's 47 are exact, since a slot is taken again only a
window after its request's answer came, and the platform counted the request before it
answered (``bot.delivery.ratelimit``). The reserved share's turns are 2 a second, 0.5 s apart
whichever instance takes them (``bot.cluster.turns`` spaces one fewer than a share this small);
the third is the spare for the arrivals no instance sees: a turn taken late (up to a spacing,
a busy process) lands next to the following one, or a slower trip carries a request into the
next turn's second. So 47 + 3 = 50, whoever sends and however the instances start, stop or
die, unless both happen to one turn: taken nearly a whole spacing late *and* slower on its
way than a turn 1.5 s after it, it lets a fourth outside request arrive within a second (51).
The reserve of 4 before (46, and 3 turns a second + 1) had the same worst case (a fifth).
The price of the reserve is its rate, unused by the holder while no instance starts (3 of 50),
and the outside requests' pace, 2 a second for the whole fleet: an instance's 7 start-up
requests take about 3 s (twice that when two start at once), a shard's login (2 requests) up
to 1 s of its hand-over, a follow's DM channel a turn (its interaction is acknowledged before).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from bot.base.clock import Clock, Sleep
from bot.cluster.lease import Holder, Lease
from bot.cluster.turns import SharedTurns
from bot.delivery.adapter import Adapter
from bot.domain.subscription import Platform
from bot.errors import StoreError, TransientDeliveryError
from bot.store import Database, buckets

log = logging.getLogger(__name__)


class SendingLease:
    """The right to send under one platform's budget (see the module docstring): a
    :class:`~bot.cluster.lease.Lease` of ``seconds``, renewed while this instance sends."""

    def __init__(
        self,
        db: Database,
        platform: Platform,
        key: str,
        holder: str,
        clock: Clock,
        *,
        seconds: float,
    ) -> None:
        self.db = db
        self.name = f"send:{platform}:{key}" if key else f"send:{platform}"
        self.holder = holder
        self.lease = Lease(self.name, seconds, clock)
        self._holder = Holder(db, holder, clock)
        self._mine = False
        """This instance took the lease and has not handed it back."""

    @property
    def held(self) -> bool:
        """Whether this instance may send under the budget now, as far as it knows."""
        return self.lease.held

    async def take(self) -> bool:
        """Take or renew the lease; whether this instance holds it (a store that does not
        answer: not held)."""
        try:
            got = bool(await self._holder.take([self.lease]))
        except StoreError as exc:
            log.warning("cannot take or renew the sending lease %s: %s", self.name, exc)
            self.lease.lost()
            got = False
        was = self._mine
        self._mine = got
        if got and not was:
            log.info("sending under the budget %s now", self.name)
        return got

    async def renew(self) -> None:
        """Renew the lease while this instance holds it, once it is due."""
        if self._mine and (self.lease.due or not self.lease.held):
            await self.take()

    async def ensure(self) -> None:
        """Renew the lease now if its renewal is late (a busy process); raise
        :class:`TransientDeliveryError` when this instance no longer holds it: the request
        must not go out."""
        if not self.held and self._mine:
            await self.take()
        if not self.held:
            raise TransientDeliveryError(
                f"this instance no longer holds the sending lease {self.name}"
            )

    async def hand_back(self, after: float) -> None:
        """Nothing left to send: the lease is free for another instance ``after`` seconds
        from now (a window past this instance's last request)."""
        if not self._mine:
            return
        self._mine = False
        try:
            await self._holder.hand_back([self.lease], after=after)
        except StoreError as exc:  # it expires by itself
            log.warning("cannot hand the sending lease %s back: %s", self.name, exc)


Hold = Callable[[str, float], Awaitable[None]]


class SharedBudget:
    """One platform-wide bucket of the budget leased by :class:`SendingLease`: a request's turn
    is granted while the lease is held and the bucket is not held after a 429 (in the store:
    ``name`` is the bucket's row)."""

    def __init__(
        self, name: str, lease: SendingLease, clock: Clock, sleep: Sleep, hold: Hold
    ) -> None:
        self.name = name
        self.lease = lease
        self.clock = clock
        self.sleep = sleep
        self._hold = hold
        self._held_until = float("-inf")

    async def turn(self) -> None:
        """Wait out a hold on the bucket; raise when the lease is no longer held."""
        wait = self._held_until - self.clock.monotonic()
        if wait > 0:
            await self.sleep(wait)
        await self.lease.ensure()

    def mine(self) -> bool:
        """Whether this instance holds the lease now (its requests are the bucket's)."""
        return self.lease.held

    def held_for(self, seconds: float) -> None:
        """The store says the bucket is held ``seconds`` more (read on taking the lease)."""
        self._held_until = max(self._held_until, self.clock.monotonic() + seconds)

    async def hold(self, seconds: float) -> None:
        """The platform said to wait ``seconds``: no instance sends under it until then."""
        self.held_for(seconds)
        try:
            await self._hold(self.name, seconds)
        except StoreError as exc:  # this instance's own limiter holds anyway
            log.warning("could not hold the shared budget %s: %s", self.name, exc)


class PlatformBudget:
    """A platform's whole rate budget as one instance sees it: the lease, and a
    :class:`SharedBudget` for each of the platform's platform-wide buckets, named
    ``PLATFORM:KEY:BUCKET`` in the store (KEY: ``Adapter.budget_key``)."""

    def __init__(
        self,
        db: Database,
        platform: Platform,
        adapter: Adapter,
        holder: str,
        clock: Clock,
        sleep: Sleep,
        *,
        seconds: float,
    ) -> None:
        self.db = db
        self.lease = SendingLease(db, platform, adapter.budget_key, holder, clock, seconds=seconds)
        key = f"{adapter.budget_key}:" if adapter.budget_key else ""
        wide = [b for b in adapter.limits.named().values() if not b.per_channel]
        self.buckets = {
            b.name: SharedBudget(f"{platform}:{key}{b.name}", self.lease, clock, sleep, self._hold)
            for b in wide
        }
        self.quiet = max((b.window.seconds for b in wide), default=0.0) * 1.01 + 0.05
        """How long after its last request an instance's lease stays its own when it hands it
        back: the longest window of the buckets (the next holder starts with it clear)."""

    async def leased(self, taken: Callable[[], None] = lambda: None) -> bool:
        """Whether this instance may claim and send the platform's deliveries now: it holds the
        lease (taking it if it is free: then ``taken`` is called, and the new holder first
        reads how long a 429 holds the buckets)."""
        if self.lease.held:
            return True
        if not await self.lease.take():
            return False
        taken()
        try:
            async with self.db.connect() as conn:
                for budget in self.buckets.values():
                    budget.held_for(await buckets.held_for(conn, budget.name))
        except StoreError as exc:
            log.warning("cannot read the holds of %s: %s", self.lease.name, exc)
        return True

    async def hand_back(self) -> None:
        """Nothing to send now: another instance may take the budget a window from now."""
        await self.lease.hand_back(self.quiet)

    async def _hold(self, name: str, seconds: float) -> None:
        async with self.db.begin() as conn:
            await buckets.hold(conn, name, seconds)


class OutsideShare:
    """The reserved shares of a platform's platform-wide buckets (see the module docstring):
    :meth:`turn` before each request made outside the pacer, in any instance of the store."""

    def __init__(
        self, db: Database, platform: Platform, adapter: Adapter, clock: Clock, sleep: Sleep
    ) -> None:
        self.db = db
        self.sleep = sleep
        key = f"{adapter.budget_key}:" if adapter.budget_key else ""
        shares = [(b.name, b.split()[1]) for b in adapter.limits.named().values()]
        self.turns = [
            SharedTurns(f"{platform}:{key}{name}:outside", w, clock, sleep, self._take)
            for name, w in shares
            if w.limit > 0
        ]

    async def turn(self) -> None:
        """Wait for a turn in each reserved share (a store that fails: a window's wait)."""
        for turns in self.turns:
            try:
                await turns.turn()
            except StoreError as exc:
                log.warning("cannot reserve a turn of %s (%s): waiting a window", turns.name, exc)
                await self.sleep(turns.window.seconds)

    async def _take(self, name: str, turns: int, every: float) -> float:
        async with self.db.begin() as conn:
            return await buckets.reserve(conn, name, turns=turns, every=every)
