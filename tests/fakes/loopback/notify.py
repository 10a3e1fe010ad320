"""Waiting for what a fake records, without sleeping: the fake calls :meth:`notify` whenever it
records something, and a test waits until what it expects is there."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class ChangeNotifier:
    """Wakes waiters whenever the fake records something (a call, an ack, a connection)."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def notify(self) -> None:
        self._event.set()
        self._event = asyncio.Event()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:  # noqa: ASYNC109
        try:
            async with asyncio.timeout(timeout):
                while True:
                    event = self._event
                    if predicate():
                        return
                    await event.wait()
        except TimeoutError:
            raise TimeoutError(f"condition not met within {timeout} s") from None
