"""Each Slack request carried out once: a bolt middleware that drops a request seen before.

Slack signs every HTTP-mode request over its timestamp and body, and bolt takes a timestamp up
to five minutes old (:data:`WINDOW`): inside that window a captured request verifies again, and
without this, a replayed ``apikey create`` made a key each time. A request is known by its
signature (``X-Slack-Signature``: that body at that second) and by its own id, ``trigger_id``
(slash commands, forms) or ``event_id`` (Events API): one request re-signed, as a retry
(``X-Slack-Retry-Num``), is the same request. Seen before, within the window, it is answered
200 with nothing and not carried out.

The ids are kept in the store (``bot.store.request_receipts``), hashed, until they stop
verifying, so that a request replayed to another instance sharing the store is dropped there too;
an adapter with no store (alone, in a test), or whose store fails for a moment, keeps them in
its own memory (at most :data:`KEPT`, the oldest going first).

The middleware runs after bolt's own, so only a request whose signature verified is remembered:
a forged one cannot spoil a real one's id. Socket Mode requests carry no signature and keep
their ``trigger_id`` check.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from cachetools import TTLCache
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.platform import Clock, Database, StoreError
from bot.platform import request_receipts as receipts

log = logging.getLogger(__name__)

WINDOW = 300.0 + 60.0
"""Seconds an id is kept: bolt's five minutes of timestamp tolerance, and a minute of skew."""
KEPT = 20_000
"""Ids kept at most."""
PURGE_S = 60.0
"""How often the receipts expired are deleted from the store (with a request's own)."""


def _first(headers: Mapping[str, Sequence[str]], name: str) -> str:
    values = headers.get(name) or ()
    return str(values[0]) if values else ""


class Replays:
    """The ids of the requests taken in lately (see the module docstring)."""

    def __init__(self, clock: Clock, store: Database | None = None, *, kept: int = KEPT) -> None:
        self.clock = clock
        self.store = store
        self._seen: TTLCache[str, None, float] = TTLCache(kept, WINDOW, timer=clock.monotonic)
        self._purged: float | None = None
        """When the store's expired receipts were last deleted (``clock.monotonic``)."""

    def ids(self, req: AsyncBoltRequest) -> list[str]:
        """What names ``req``: its signature, its ``trigger_id`` or ``event_id``, when it has
        them."""
        found = []
        signature = _first(req.headers, "x-slack-signature")
        if signature:
            found.append(f"signature:{signature}")
        body: Any = req.body
        if isinstance(body, dict):
            for field, kind in (("trigger_id", "trigger"), ("event_id", "event")):
                value = body.get(field)
                if isinstance(value, str) and value:
                    found.append(f"{kind}:{value}")
        return found

    async def first(self, req: AsyncBoltRequest) -> bool:
        """Whether ``req`` is new, to this instance and every other on its store; remembers
        its ids either way."""
        ids = self.ids(req)
        if not ids:
            return True
        if self.store is not None:
            now, tick = self.clock.now(), self.clock.monotonic()
            try:
                async with self.store.begin() as conn:
                    if self._purged is None or tick - self._purged >= PURGE_S:
                        await receipts.purge(conn, now)
                        self._purged = tick
                    return await receipts.first(
                        conn, ids, at=now, expires_at=now + timedelta(seconds=WINDOW)
                    )
            except StoreError as exc:  # this instance's memory, until the store is back
                log.warning("slack: request receipts not kept in the store: %s", exc)
        new = not any(i in self._seen for i in ids)
        for i in ids:
            self._seen[i] = None
        return new

    async def middleware(
        self, req: AsyncBoltRequest, next: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """The bolt global middleware: a request seen before gets 200 and nothing else."""
        if await self.first(req):
            await next()
            return None
        retry = _first(req.headers, "x-slack-retry-num")
        log.warning(
            "slack: a request seen in the last %d s came again%s: not carried out again",
            int(WINDOW),
            f" (retry {retry[:8]})" if retry else "",
        )
        return BoltResponse(status=200, body="")
