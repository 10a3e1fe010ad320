"""discord.py's own waits on a test's virtual time.

discord.py keeps Discord's rate limits itself: a bucket that an answer left empty
(``X-RateLimit-Remaining: 0``) is slept out before the next request, ``reset_after`` on the
event loop's clock (``discord.http.Ratelimit``: ``_refresh`` sleeps, ``acquire`` waits for its
turn until ``expires``, both on ``loop.time()``), and its webhook client (interactions) sleeps
the same way (``AsyncDeferredLock``). Against FakeDiscord on a virtual clock those waits were
the tests' real time: seconds each, while the fake's clock would have reached the reset at once
had the test's virtual time moved.

:func:`virtual_waits` gives those two modules of discord.py an ``asyncio`` of their own, the
real one but for three names: ``get_running_loop`` (the running loop, its ``time()`` the
virtual clock: what ``Ratelimit`` measures ``expires`` with), ``sleep`` and ``wait`` (with a
timeout: until that deadline of the virtual clock). A wait moves the virtual time to its
deadline through the test's own sleep (so a rig's hold still bounds it) instead of waiting for
it, and never past it: waits that end together move the time once. discord.py's code runs as it
is; only its clock is the test's. The fake sees the same time pass, so its bucket has reset when
discord.py's wait ends, and a wait too short still gets a 429 from it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import discord.http
import discord.webhook.async_

PATCHED: tuple[ModuleType, ...] = (discord.http, discord.webhook.async_)
"""The modules of discord.py whose waits are made virtual (each imports ``asyncio`` whole)."""

YIELDS = 20
"""Turns of the loop a wait with a timeout gives what it waits for (a request in flight on
loopback answering, another waiter waking it) before the virtual time moves to its deadline."""


class _Loop:
    """The running loop, as discord.py's rate limits see it: ``time()`` is the virtual clock."""

    def __init__(self, loop: asyncio.AbstractEventLoop, now: Callable[[], float]) -> None:
        self._loop = loop
        self._now = now

    def time(self) -> float:
        return self._now()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


class _Asyncio:
    """``asyncio`` for discord.py's modules, with its waits on the virtual clock."""

    def __init__(self, now: Callable[[], float], sleep: Callable[[float], Awaitable[None]]):
        self._now = now
        self._sleep = sleep
        self.waits = 0
        """Waits made virtual so far (each ``sleep``, and each ``wait`` that timed out)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    def get_running_loop(self) -> _Loop:
        return _Loop(asyncio.get_running_loop(), self._now)

    async def _until(self, deadline: float) -> None:
        self.waits += 1
        ahead = deadline - self._now()
        await self._sleep(ahead if ahead > 0 else 0.0)

    async def sleep(self, delay: float, result: Any = None) -> Any:
        await self._until(self._now() + delay)
        return result

    async def wait(
        self,
        fs: Iterable[asyncio.Future[Any]],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 (asyncio.wait's own signature)
        return_when: str = asyncio.ALL_COMPLETED,
    ) -> tuple[set[asyncio.Future[Any]], set[asyncio.Future[Any]]]:
        if timeout is None:
            return await asyncio.wait(fs, return_when=return_when)
        deadline = self._now() + timeout
        futures = set(fs)

        def over() -> bool:
            done = [f for f in futures if f.done()]
            if return_when == asyncio.FIRST_COMPLETED:
                return bool(done)
            if return_when == asyncio.FIRST_EXCEPTION and any(
                not f.cancelled() and f.exception() is not None for f in done
            ):
                return True
            return len(done) == len(futures)

        for _ in range(YIELDS):
            if over():
                break
            await asyncio.sleep(0)
        else:
            if not over():
                await self._until(deadline)
        done = {f for f in futures if f.done()}
        return done, futures - done


@contextmanager
def virtual_waits(
    now: Callable[[], float], sleep: Callable[[float], Awaitable[None]]
) -> Iterator[_Asyncio]:
    """discord.py's rate-limit waits on the clock ``now`` (what the fake counts its limits
    with), each moving it through ``sleep`` (the test's virtual sleep); as they were after."""
    shim = _Asyncio(now, sleep)
    saved = [(module, module.asyncio) for module in PATCHED]
    for module, _ in saved:
        module.asyncio = shim  # type: ignore[attr-defined]
    try:
        yield shim
    finally:
        for module, real in saved:
            module.asyncio = real  # type: ignore[attr-defined]
