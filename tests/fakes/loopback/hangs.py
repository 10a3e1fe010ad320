"""Requests a fake platform takes but does not answer until the test says so (a hanging request),
the same way on every fake: ``hang(channel)`` returns the event that answers them."""

from __future__ import annotations

import asyncio


class Hangs:
    """The channels whose requests hang, each until its event is set."""

    def __init__(self) -> None:
        self._held: dict[str, asyncio.Event] = {}

    def hang(self, channel: str) -> asyncio.Event:
        """From now on, every request about ``channel`` waits (unanswered, not carried out) until
        the event returned is set."""
        release = self._held[channel] = asyncio.Event()
        return release

    async def wait(self, channel: str | None) -> None:
        """Hold a request about ``channel`` while it hangs."""
        release = self._held.get(channel) if channel is not None else None
        if release is not None:
            await release.wait()
