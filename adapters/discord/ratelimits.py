"""Discord's global 429s, seen where discord.py's HTTP session sees them.

discord.py waits a 429 out and retries the request by itself (up to ``max_ratelimit_timeout``),
so the dispatcher would never hear of a global 429 Discord answered because the bot's real
global limit is smaller than the one configured. :class:`GlobalWatch` is an ``http_trace`` for
discord.py's client: every global 429 is told to the dispatcher's pacer (``Pacer.said``), which
lowers its pace to what Discord let through and holds the budget for every instance.

The same trace sees each answer arrive, once its status and headers are read and before
discord.py reads the body and builds what it returns (aiohttp's ``on_request_end``; its
``on_response_chunk_received`` comes only with the body): it closes the request's slots there
(``bot.platform.answered``), so that the time discord.py and the bot take to handle the answer
is not counted into the pace. Discord counted the request before it answered.

The same trace sees every request before it goes out: on a shared store, one that counts
against the global limit (it carries the bot's token; interaction callbacks and follow-ups do
not count) and that no pacer counted (``PACED``: the start-ups, each shard's login) first waits
for a turn of the global bucket's reserved share (``bot.delivery.shared.OutsideShare``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import aiohttp

from bot.platform import PACED, LimitSaid, answered, retry_after_header


class GlobalWatch:
    """Tells ``said`` (once set) of each global 429 on the session it traces, and the pacer of
    each answer's arrival; with ``outside`` set, waits for it before each request counted
    against the global limit outside a pacer."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.said: LimitSaid | None = None
        self.outside: Callable[[], Awaitable[None]] | None = None
        self.seen = 0
        """Global 429s seen so far."""
        self.outside_turns = 0
        """Requests that waited for ``outside`` so far."""

    def trace(self) -> aiohttp.TraceConfig:
        trace = aiohttp.TraceConfig()
        trace.on_request_start.append(self._starting)
        trace.on_request_end.append(self._ended)
        return trace

    async def _starting(
        self, session: aiohttp.ClientSession, ctx: object, params: aiohttp.TraceRequestStartParams
    ) -> None:
        if self.outside is None or PACED.get():
            return
        if not params.headers.get("Authorization", "").startswith("Bot "):
            return  # not the bot's: the gateway, interaction callbacks and follow-ups
        self.outside_turns += 1
        await self.outside()

    async def _ended(
        self, session: aiohttp.ClientSession, ctx: object, params: aiohttp.TraceRequestEndParams
    ) -> None:
        response = params.response
        if is_global_429(response.status, response.headers):
            self.seen += 1
            if self.said is not None:  # while its own slot is open: not counted as let through
                self.said(self.bucket, await retry_after_of(response))
        answered()


def is_global_429(status: int, headers: Mapping[str, str]) -> bool:
    """A 429 for the bot's global limit (``X-RateLimit-Global``, or the scope ``global``)."""
    return status == 429 and (
        headers.get("X-RateLimit-Global", "").lower() == "true"
        or headers.get("X-RateLimit-Scope", "").lower() == "global"
    )


async def retry_after_of(response: aiohttp.ClientResponse) -> float:
    """The seconds a 429 says to wait: ``retry_after`` in its JSON body (read once here and
    kept by aiohttp for discord.py), else the Retry-After header, else 1."""
    try:
        body = await response.json(content_type=None)
    except (aiohttp.ClientError, ValueError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("retry_after"), int | float):
        return float(body["retry_after"])
    header = retry_after_header(response.headers)
    return header if header is not None else 1.0
