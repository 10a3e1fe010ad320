"""A lease: what one instance at a time holds over the ``leases`` table, until it expires.

Polling a count (``bot.cluster.polls``), running a gateway shard (``bot.cluster.shards``) and
sending under a platform's budget (``bot.delivery.shared``) are each held by one instance at a
time through a :class:`Lease`, with one renewal rule and one notion of held:

* a lease taken or renewed lasts its ``seconds`` in the store, from the start of the statement
  that took it (``expires_at``), whenever the statement ends (a slow store);
* this instance counts it as **held** until :data:`MARGIN` of its life before that expiry, by
  its own monotonic clock (for clocks that disagree a little, and for stopping what it guards
  before another instance may take it), never by whether one renewal went through: a renewal
  that fails or stalls leaves the lease held while it lasts;
* it is **due** for renewal once a third of its life has passed since it was last taken
  (:data:`RENEW_AFTER`), so that two renewals may fail before it lapses.

:class:`Holder` takes, renews and hands back any number of leases in one statement each
(``bot.store.leases``), in transactions on the store's connections kept apart
(``Database.begin_urgent``): a lease's renewal never waits for a connection behind a fan-out's
statements, which would let it lapse on a busy instance. :func:`shared` says, once for
everyone, whether other instances may share a store at all: on SQLite there is one instance and
no lease is needed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.base.clock import Clock
from bot.store import Database, leases

MARGIN = 0.1
"""The share of a lease's life, at its end, that this instance does not rely on."""
RENEW_AFTER = 1 / 3
"""The share of a lease's life after which it is due for renewal."""


def shared(db: Database | None) -> bool:
    """Whether other instances may share the store (PostgreSQL): then what one instance at a
    time holds is leased; on SQLite (one instance, ``bot.cluster.single``) it is not."""
    return db is not None and db.dialect_name != "sqlite"


class Lease:
    """One lease as this instance holds it: its name, its life, when it was last taken."""

    def __init__(self, name: str, seconds: float, clock: Clock) -> None:
        self.name = name
        self.seconds = seconds
        self.clock = clock
        self._taken_at = -math.inf
        """When the statement that last took or renewed it started (monotonic)."""

    def expiry(self, now: datetime) -> datetime:
        """When a lease taken at ``now`` expires in the store."""
        return now + timedelta(seconds=self.seconds)

    def taken(self, at: float) -> None:
        """A statement started at ``at`` (monotonic) took or renewed it."""
        self._taken_at = at

    def lost(self) -> None:
        """Another instance has it, or this one handed it back."""
        self._taken_at = -math.inf

    def left(self) -> float:
        """How many more seconds it is held (0 when it is not)."""
        end = self._taken_at + self.seconds * (1 - MARGIN)
        return max(0.0, end - self.clock.monotonic())

    @property
    def held(self) -> bool:
        """Whether this instance holds it now (see the module docstring)."""
        return self.left() > 0

    @property
    def due(self) -> bool:
        """Whether it is held and a third of its life has passed since it was taken."""
        return self.held and self.clock.monotonic() >= self._taken_at + self.seconds * RENEW_AFTER

    def __repr__(self) -> str:
        return f"Lease({self.name!r}, held={self.held})"


class Holder:
    """This instance as the holder of leases: takes, renews and hands them back in one
    statement each, and keeps each :class:`Lease` held or not by the answer."""

    def __init__(self, db: Database, holder: str, clock: Clock) -> None:
        self.db = db
        self.holder = holder
        self.clock = clock

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A transaction for leases (on the connections kept apart)."""
        return self.db.begin_urgent()

    async def take(self, wanted: Iterable[Lease], conn: AsyncConnection | None = None) -> set[str]:
        """Take or renew ``wanted`` (free, expired or this instance's own) in one statement: the
        names taken; those another instance holds are lost. In a transaction of its own, whose
        commit they are counted held from (a renewal that did not commit renews nothing), or
        in ``conn``'s (for leases not relied on before the caller's transaction commits)."""
        wanted = list(wanted)
        began, now = self.clock.monotonic(), self.clock.now()
        until = {lease.name: lease.expiry(now) for lease in wanted}
        if conn is None:
            async with self.transaction() as own:
                taken = await leases.take_many(own, until, self.holder, now=now)
        else:
            taken = await leases.take_many(conn, until, self.holder, now=now)
        for lease in wanted:
            if lease.name in taken:
                lease.taken(began)
            else:
                lease.lost()
        return taken

    async def hand_back(
        self, given: Iterable[Lease], *, after: float = 0.0, conn: AsyncConnection | None = None
    ) -> None:
        """Hand ``given`` back: free for another instance at once, or ``after`` seconds from
        now (kept in the store that long, no longer held here); in a transaction of its own or
        in ``conn``'s."""
        given = list(given)
        for lease in given:
            lease.lost()
        if conn is None:
            async with self.transaction() as own:
                await self._give(own, given, after)
        else:
            await self._give(conn, given, after)

    async def _give(self, conn: AsyncConnection, given: list[Lease], after: float) -> None:
        if after <= 0:
            await leases.release_many(conn, [lease.name for lease in given], self.holder)
            return
        now = self.clock.now()
        until = now + timedelta(seconds=after)
        await leases.take_many(conn, {lease.name: until for lease in given}, self.holder, now=now)
