"""discord.py's own rate-limit waits on the tests' virtual time (``tests.adapters.discord_time``).

discord.py sleeps out a bucket that an answer left empty before it sends on it again. In the
``world`` fixture that wait moves the shared virtual time instead of the real clock: the fake
sees the window pass and takes the next post, and no test waits for it. The fake still counts
on its own clock: a wait that moved the time too little draws its 429.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import pytest

from adapters.discord.lib import discord
from tests.adapters import test_discord
from tests.adapters.discord_time import PATCHED, virtual_waits
from tests.adapters.test_discord import TOKEN, VirtualTime, World
from tests.fakes.discord_fake import FakeDiscord

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world

pytestmark = pytest.mark.timeout(30)

LIMIT, WINDOW = 5, 5.0
"""The fake's defaults for posts in one channel: 5 each 5 s."""


async def post(fake: FakeDiscord, channel: int, count: int) -> None:
    """``count`` posts in ``channel`` one after another, by discord.py's REST client alone."""
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    with fake.patch_discord_py():
        try:
            await http.static_login(TOKEN)
            for i in range(count):
                params = discord.http.handle_message_parameters(content=f"post {i}")
                await http.send_message(channel, params=params)
        finally:
            await http.close()


async def test_discord_py_waits_out_an_empty_bucket_on_the_virtual_clock(world: World) -> None:
    fake, vt = world.fake, world.vt
    virtual0, real0 = vt.bot.monotonic(), time.monotonic()
    await post(fake, world.results, 2 * LIMIT + 1)
    assert [m.content for m in fake.messages(world.results)] == [
        f"post {i}" for i in range(2 * LIMIT + 1)
    ]
    assert fake.count_429 == 0  # each wait was long enough for the fake
    # Two windows slept out (after the 5th post and the 10th), on the virtual clock...
    assert vt.bot.monotonic() - virtual0 >= 2 * WINDOW - 0.1
    # ...and not on the real one (discord.py would have slept 10 s).
    assert time.monotonic() - real0 < WINDOW


def short_of(vt: VirtualTime, share: float) -> Callable[[float], Awaitable[None]]:
    """A broken virtual sleep that moves the time only ``share`` of what it was asked."""

    async def sleep(seconds: float) -> None:
        await vt.sleep(seconds * share)

    return sleep


async def test_a_virtual_wait_too_short_still_draws_the_fakes_429() -> None:
    vt = VirtualTime()
    with virtual_waits(vt.fake, short_of(vt, 0.5)) as waits:
        async with FakeDiscord(token=TOKEN, clock=vt.fake) as fake:
            guild = fake.add_guild("Bessemer Watch")
            channel = fake.add_channel(guild, "results")
            with pytest.raises(discord.HTTPException) as refused:
                await post(fake, channel, LIMIT + 1)
    assert all(module.asyncio is asyncio for module in PATCHED)  # restored
    # The 6th post went after half the window: the fake answered 429, and again each time
    # discord.py (no adapter stops it here) slept that out as short, 5 tries, then gave up.
    assert refused.value.status == 429
    assert fake.count_429 == 5
    assert waits.waits == 1 + 5  # the empty bucket, then each 429
    assert len(fake.messages(channel)) == LIMIT
