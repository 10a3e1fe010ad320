"""Reading an HTTP body with a size cap, for the ops server's requests and the sources' responses.

aiohttp's ``StreamReader`` is the same on both sides (``web.Request.content``,
``ClientResponse.content``): the body is refused as soon as it is known to be too large, from
its Content-Length before reading anything, or while reading once more than ``limit`` bytes
have arrived, so a large body is never held whole in memory.
"""

from __future__ import annotations

from collections.abc import Callable

import aiohttp

CHUNK = 65_536
"""Bytes read at a time."""


async def read_capped(
    stream: aiohttp.StreamReader,
    *,
    declared: int | None,
    limit: int,
    too_big: Callable[[int | None], Exception],
) -> bytes:
    """The whole body of ``stream``, at most ``limit`` bytes.

    ``declared`` is the Content-Length, if any. A larger body raises ``too_big(declared)`` when
    the Content-Length already says so, else ``too_big(None)`` once the bytes read exceed it.
    """
    if declared is not None and declared > limit:
        raise too_big(declared)
    chunks: list[bytes] = []
    size = 0
    async for chunk in stream.iter_chunked(CHUNK):
        size += len(chunk)
        if size > limit:
            raise too_big(None)
        chunks.append(chunk)
    return b"".join(chunks)
