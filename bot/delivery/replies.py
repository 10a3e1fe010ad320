"""Commands' replies, paced like every other request of their platform, and never dropped for a
429.

Every adapter sends each request that answers a command (a message in the chat, a Discord
interaction's follow-up, a Slack ``respond``) through its :class:`Replies`, naming the route the
platform counts it under (its own entry in the adapter's limits table, drawing from the buckets
the platform counts it in). The route is ``urgent``: the reply waits for the same slots as the
deliveries of its platform, but ahead of the routine ones waiting for them
(``bot.delivery.pacing``), so a fan-out to a thousand channels does not keep a member waiting.

A 429 is not the end of a reply: it holds the route's platform-wide buckets as it would for a
delivery (``Pacer.hold``), then the reply waits the Retry-After the platform gave and goes
again, as long as the platform still takes it (``within``: the seconds the platform lets a
reply come at all, from when the command arrived: a Discord interaction token's 15 minutes, a
Slack response_url's 30) and at most ``ATTEMPTS`` times. Nothing else is retried here: after a
server error or a lost answer the reply may have been shown, and it has no key to check that by.

Replies take no shared turn (``Pacer.turn``): any instance answers the commands it receives,
whichever holds the platform's delivery budget. Until the dispatcher's pacer is given
(:meth:`Replies.use`, as the app starts) replies go unpaced, retried all the same.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from bot.base.clock import Sleep
from bot.delivery.pacing import Pacer, Route
from bot.errors import RateLimited

log = logging.getLogger(__name__)

T = TypeVar("T")
ATTEMPTS = 8
"""Tries of one reply at most (each 429 but the last waited out)."""
DEFAULT_WAIT_S = 1.0
"""The wait after a 429 that said nothing of how long."""


class Replies:
    """The replies of one platform's commands (see the module docstring)."""

    def __init__(
        self, sleep: Sleep = asyncio.sleep, monotonic: Callable[[], float] = time.monotonic
    ) -> None:
        self._pacer: Pacer | None = None
        self._sleep = sleep
        self._monotonic = monotonic

    def use(self, pacer: Pacer) -> None:
        """Pace replies with ``pacer`` (the dispatcher's, for this platform), on its clock."""
        self._pacer = pacer
        self._sleep = pacer.sleep
        self._monotonic = pacer.clock.monotonic

    def monotonic(self) -> float:
        """The time replies are paced by (to say when a command arrived, for ``within``)."""
        return self._monotonic()

    async def send(
        self,
        route: Route,
        request: Callable[[], Awaitable[T]],
        *,
        since: float | None = None,
        within: float | None = None,
    ) -> T:
        """Run ``request`` (one platform call, its errors translated to tallybot's) in the
        slots of ``route`` (made urgent), again after each 429's wait while there is time:
        ``within`` seconds from ``since`` (by :meth:`monotonic`; default: now). The last
        :class:`RateLimited`, when it could not be waited out, is raised."""
        urgent = dataclasses.replace(route, urgent=True)
        start = self._monotonic() if since is None else since
        for attempt in range(1, ATTEMPTS + 1):
            try:
                return await self._once(urgent, request)
            except RateLimited as exc:
                wait = exc.retry_after if exc.retry_after is not None else DEFAULT_WAIT_S
                late = within is not None and self._monotonic() + wait > start + within
                if attempt == ATTEMPTS or late:
                    raise
                log.info("a reply (%s) was rate limited: again in %.1f s", route.method, wait)
                await self._sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _once(self, route: Route, request: Callable[[], Awaitable[T]]) -> T:
        pacer = self._pacer
        if pacer is None:
            return await request()
        async with pacer.slot(route):
            try:
                return await request()
            except RateLimited as exc:
                wait = exc.retry_after if exc.retry_after is not None else DEFAULT_WAIT_S
                pacer.hold(route, wait)
                raise
