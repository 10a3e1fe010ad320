"""Each count polled by one instance at a time: the holder of its lease (``poll:COUNT``).

Every instance schedules every count; when a count's turn comes, an instance first takes or
renews the count's lease and polls only if it holds it. The lease lasts the count's interval
plus :data:`LEASE_SLACK_S`, so a holder that stops renewing (it died) loses it that long after
its last poll, and the next instance whose turn comes takes it: polling resumes within two
intervals plus 10 s. Tallies are stored once whichever instance reads them (each is compared
with the last one stored, and ``(count, seq)`` is unique). On SQLite there is one instance and
no lease.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from bot.clock import Clock
from bot.cluster.identity import Instance
from bot.errors import StoreError
from bot.store import Database, leases

LEASE_SLACK_S = 5.0
"""How long past its count's interval a poll lease lasts (for a slow poll, a busy store)."""

log = logging.getLogger(__name__)

Poll = Callable[[], Awaitable[object]]


def lease_name(count_id: str) -> str:
    return f"poll:{count_id}"


class PollLeases:
    """Guards each count's poll with its lease (see the module docstring)."""

    def __init__(self, db: Database, clock: Clock, instance: Instance) -> None:
        self.db = db
        self.clock = clock
        self.instance = instance
        self.shared = db.dialect_name != "sqlite"

    def guard(self, count_id: str, interval: float, poll: Poll) -> Poll:
        """``poll``, run only while this instance holds the count's lease."""
        if not self.shared:
            self.instance.counts.add(count_id)
            return poll

        async def leased() -> object:
            if not await self.hold(count_id, interval):
                return None
            return await poll()

        return leased

    async def hold(self, count_id: str, interval: float) -> bool:
        """Take or renew the count's lease; whether this instance holds it (a store that does
        not answer: not held, this turn)."""
        now = self.clock.now()
        until = now + timedelta(seconds=interval + LEASE_SLACK_S)
        try:
            async with self.db.begin() as conn:
                held = await leases.take(
                    conn, lease_name(count_id), self.instance.id, now=now, until=until
                )
        except StoreError as exc:
            log.warning("cannot renew the poll lease: %s", exc, extra={"count": count_id})
            held = False
        if held and count_id not in self.instance.counts:
            log.info("polling this count now", extra={"count": count_id})
            self.instance.counts.add(count_id)
        elif not held and count_id in self.instance.counts:
            log.info("another instance polls this count now", extra={"count": count_id})
            self.instance.counts.discard(count_id)
        return held

    async def release_all(self) -> None:
        """Hand every lease this instance holds on at once (a clean stop)."""
        if not self.shared:
            return
        try:
            async with self.db.begin() as conn:
                for count_id in sorted(self.instance.counts):
                    await leases.release(conn, lease_name(count_id), self.instance.id)
        except StoreError as exc:
            log.warning("cannot hand the poll leases on: %s", exc)
        self.instance.counts.clear()
