"""One viewer's stream of live updates (``GET /c/<id>/events``, Server-Sent Events).

The viewer joins its count's channel first, then is sent what it missed since the seq it names
(``Last-Event-ID``, which a browser sends by itself when it reconnects, or ``?last=SEQ`` from
the page), read from the store, then every new event as the broadcaster writes it; an event it
already had is not sent twice.

Then the handler hands the connection over and returns: the viewer becomes the connection's
protocol (:class:`~bot.web.broadcast.Viewer`) and aiohttp lets go of it, so that a stream held
open for half an hour costs no request, no task and no HTTP parser (``bench/web_sse.py``
measured about 2 KB of heap a viewer, against 12 KB when the handler waited). The stream
ends when the viewer leaves, is dropped for not reading (:mod:`bot.web.broadcast`) or its
lifetime is up; the page then reconnects and catches up.
"""

from __future__ import annotations

import asyncio

from aiohttp import HttpVersion11, web

from bot.errors import RequestError, StoreError
from bot.web.broadcast import Broadcaster, Viewer, chunk
from bot.web.events import Counts

RETRY_MS = 1000
"""How soon a browser reconnects after the stream ends (the ``retry`` field)."""
HEADERS = {
    "Content-Type": "text/event-stream",
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


def address(request: web.Request, *, forwarded_for: bool) -> str:
    """Who is asking: the peer, or behind a proxy the last hop of ``X-Forwarded-For``."""
    if forwarded_for:
        hops = request.headers.get("X-Forwarded-For", "").split(",")
        if hops[-1].strip():
            return hops[-1].strip()[:64]
    return request.remote or "?"


async def stream(
    request: web.Request, counts: Counts, broadcaster: Broadcaster, *, forwarded_for: bool = False
) -> web.StreamResponse:
    """Serve one viewer until its stream ends (RequestError 429 or 503 before it starts)."""
    count_id = request.match_info["count_id"]
    if await counts.visible(count_id) is None:
        raise web.HTTPNotFound()
    transport = request.transport
    if transport is None:  # the client left already
        return web.Response(status=204)
    chunked = request.version >= HttpVersion11
    loop = asyncio.get_running_loop()
    ip = address(request, forwarded_for=forwarded_for)
    viewer = broadcaster.join(count_id, ip, now=loop.time(), connection=transport, chunked=chunked)
    response = web.StreamResponse(headers=HEADERS)
    handed = False
    try:
        await response.prepare(request)
        # Through aiohttp once, so that the headers go first; then straight to the connection.
        await response.write(f"retry: {RETRY_MS}\n\n".encode())
        last = last_seen(request)
        known = broadcaster.latest.get(count_id)
        if known is None or known > last:
            for seq, data in await counts.missed(count_id, last):
                if not transport.is_closing():
                    transport.write(chunk(data) if chunked else data)
                last = seq
            broadcaster.latest[count_id] = max(last, broadcaster.latest.get(count_id, 0))
        viewer.sent = last
        if not viewer.closed and not transport.is_closing():
            hand_over(request, transport, viewer)
            handed = True
            viewer.catch_up()
    except (ConnectionError, RequestError, StoreError):
        pass  # the viewer left, or cannot be served any longer; it reconnects if it wants
    finally:
        if not handed:
            broadcaster.leave(viewer)
    return response


def hand_over(request: web.Request, transport: asyncio.Transport, viewer: Viewer) -> None:
    """Make ``viewer`` the protocol of the connection, and have aiohttp let go of it: with no
    transport left it neither writes the end of the body nor closes the connection, and told
    that its connection is gone it forgets the connection and ends this request."""
    handler = request.protocol
    transport.set_protocol(viewer)
    handler.transport = None
    handler.connection_lost(None)
    if not transport.is_reading():
        transport.resume_reading()
