"""Helpers for tests that drive FakeTelegram with the real aiogram client."""

from __future__ import annotations

import functools
import struct
import zlib
from typing import TYPE_CHECKING

from .server import FakeTelegram

if TYPE_CHECKING:
    from aiogram import Bot
    from aiogram.client.session.aiohttp import AiohttpSession

# aiogram is imported where it is used, never when a test module is collected: importing it
# costs ~5.5 CPU-s per process (pydantic builds every type's schema), and every pytest-xdist
# worker collects every module (see pytest_collection_modifyitems in tests/conftest.py).


@functools.cache
def loopback_session() -> type[AiohttpSession]:
    """aiogram's own session class, minus the 250 ms grace sleep in close().

    That sleep lets TLS connections to api.telegram.org shut down; loopback HTTP has none,
    and tests must not wait on the real clock. A function (the class made once, on first use)
    so that importing this module does not import aiogram.
    """
    from aiogram.client.session.aiohttp import AiohttpSession

    class LoopbackSession(AiohttpSession):
        async def close(self) -> None:
            if self._session is not None and not self._session.closed:
                await self._session.close()

    return LoopbackSession


def aiogram_bot(fake: FakeTelegram, *, token: str | None = None) -> Bot:
    """A real aiogram Bot whose requests go to the fake."""
    from aiogram import Bot
    from aiogram.client.telegram import TelegramAPIServer

    api = TelegramAPIServer.from_base(fake.base_url)
    return Bot(token or fake.token, session=loopback_session()(api=api))


def png(width: int, height: int) -> bytes:
    """A valid PNG of the given size (what a chart upload looks like)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = b"".join(b"\x00" + b"\x10\x20\x30" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
