"""The tallies every instance accepts, for this instance's viewers (a PostgreSQL store).

Each instance serves whichever viewers reached it, so each must hear of the tallies the others
accept. The pipeline announces every accepted tally in its own transaction
(:mod:`bot.store.notices`); :class:`Feed` keeps a connection listening for those notices and
passes each to :meth:`Broadcaster.accepted <bot.web.broadcast.Broadcaster.accepted>` (this
instance's own tallies arrive twice, by the in-process hook and by the notice: the broadcaster
posts a seq once). When the connection is lost it connects again, backing off, and once
listening again reads the latest seq of every count being watched, so that a tally accepted
while it was away is still posted (and forgets what it knew of the others, so that their next
viewers catch up from the store). A SQLite store is one instance: no feed is needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from bot.base.clock import Sleep
from bot.errors import StoreError
from bot.store import Database, notices
from bot.store.db import Listening
from bot.web.broadcast import Broadcaster
from bot.web.events import CATCH_UP

log = logging.getLogger(__name__)

RETRY_FIRST = 0.1
RETRY_MOST = 5.0
"""Seconds between attempts to listen again: doubling from the first to the most."""
PING_SECONDS = 30.0
"""How often the listening connection is checked (a connection can die without a word)."""


class Feed:
    """Notices of accepted tallies, from every instance, into one broadcaster."""

    def __init__(
        self,
        db: Database,
        broadcaster: Broadcaster,
        latest: Callable[[str], Awaitable[int]],
        *,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """``latest(count_id)``: the seq of the count's latest tally, read from the store."""
        self.db = db
        self.broadcaster = broadcaster
        self.latest = latest
        self.sleep = sleep
        """How it waits before listening again (tests hold it, to accept a tally meanwhile)."""
        self.listening: Listening | None = None
        """The connection listening now, if any."""
        self.connected = 0
        """How many times it has started listening (1: never lost)."""

    async def run(self) -> None:
        """Listen, and listen again whenever the connection is lost; runs until cancelled."""
        channel = notices.channel(self.db.schema)
        delay = RETRY_FIRST
        while True:
            try:
                async with self.db.listening(channel, self._notice) as listening:
                    self.listening = listening
                    self.connected += 1
                    await self._catch_up()
                    delay = RETRY_FIRST
                    await self._hold(listening)
            except StoreError as exc:
                log.warning("not hearing other instances' tallies, retrying: %s", exc)
            finally:
                self.listening = None
            await self.sleep(delay)
            delay = min(delay * 2, RETRY_MOST)

    def _notice(self, payload: str) -> None:
        found = notices.heard(payload)
        if found is not None:
            self.broadcaster.accepted(*found)

    async def _catch_up(self) -> None:
        """Post what was accepted while not listening, for every count being watched."""
        self.broadcaster.unsure()
        for count_id in list(self.broadcaster.channels):
            latest = await self.latest(count_id)
            known = self.broadcaster.latest.get(count_id, 0)
            for seq in range(max(known + 1, latest - CATCH_UP + 1), latest + 1):
                self.broadcaster.accepted(count_id, seq)

    async def _hold(self, listening: Listening) -> None:
        """Until the connection is lost (checked every :data:`PING_SECONDS`)."""
        while True:
            done, _ = await asyncio.wait([listening.lost], timeout=PING_SECONDS)
            if done:
                raise StoreError("the listening connection was lost")
            await listening.ping()
