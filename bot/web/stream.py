"""One viewer's stream of live updates (``GET /c/<id>/events``, Server-Sent Events).

The viewer joins its count's channel first, then is sent what it missed since the seq it names
(``Last-Event-ID``, which a browser sends by itself when it reconnects, or ``?last=SEQ`` from
the page), read from the store, then every new event as it is posted; an event it already had
is not sent twice. The stream ends when the viewer leaves, falls too far behind, its write is
stuck (see :meth:`bot.web.broadcast.Broadcaster.sweep`) or its lifetime is up; the page then
reconnects and catches up.
"""

from __future__ import annotations

import asyncio
import contextlib

from aiohttp import web

from bot.errors import RequestError, StoreError
from bot.web.broadcast import Broadcaster, Viewer
from bot.web.events import Counts

RETRY_MS = 1000
"""How soon a browser reconnects after the stream ends (the ``retry`` field)."""
HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache, no-transform",
    "X-Accel-Buffering": "no",
}


def last_seen(request: web.Request) -> int:
    """The last seq the viewer has: the larger of ``Last-Event-ID`` and ``?last`` (0: none)."""
    found = 0
    for raw in (request.headers.get("Last-Event-ID", ""), request.query.get("last", "")):
        raw = raw.strip()
        if raw.isascii() and raw.isdigit() and len(raw) <= 12:
            found = max(found, int(raw))
    return found


async def stream(
    request: web.Request, counts: Counts, broadcaster: Broadcaster
) -> web.StreamResponse:
    """Serve one viewer until its stream ends (RequestError 404, 429 or 503 before it starts)."""
    count_id = request.match_info["count_id"]
    if await counts.visible(count_id) is None:
        raise web.HTTPNotFound()
    transport = request.transport
    if transport is None:  # the client left already
        return web.Response(status=204)
    ip = request.remote or "?"
    loop = asyncio.get_running_loop()
    viewer = broadcaster.join(count_id, ip, now=loop.time(), abort=transport.abort)
    try:
        response = web.StreamResponse(headers=HEADERS)
        await response.prepare(request)
        await _send(viewer, response, f"retry: {RETRY_MS}\n\n".encode(), loop)
        sent = last_seen(request)
        known = broadcaster.latest.get(count_id)
        if known is None or known > sent:
            for seq, data in await counts.missed(count_id, sent):
                await _send(viewer, response, data, loop)
                sent = seq
            broadcaster.latest[count_id] = max(sent, broadcaster.latest.get(count_id, 0))
        while (batch := await broadcaster.next(viewer)) is not None:
            for seq, data in batch:
                if seq == 0 or seq > sent:
                    await _send(viewer, response, data, loop)
                    sent = max(sent, seq)
    except (ConnectionError, RequestError, StoreError):
        pass  # the viewer left, or cannot be served any longer; it reconnects if it wants
    finally:
        broadcaster.leave(viewer)
    with contextlib.suppress(ConnectionError):
        await response.write_eof()
    return response


async def _send(
    viewer: Viewer, response: web.StreamResponse, data: bytes, loop: asyncio.AbstractEventLoop
) -> None:
    viewer.writing_since = loop.time()
    await response.write(data)
    viewer.writing_since = None
