"""discord.py retries nothing by itself (``adapters.discord.retries``): a post that Discord
answers with a server error or a 429 comes back to the dispatcher, which tries again paced and
after checking the attempt anew, so a channel unsubscribed in between gets nothing.

discord.py would have slept (1 s after a 500; the 429's ``retry_after``) and sent the same
request again under the first attempt's check: the post reached a channel just told
"Unsubscribed this channel"."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.domain.subscription import Mode
from bot.store import subscriptions as sub_rows
from tests.adapters import test_discord
from tests.adapters.test_discord import World, bot_posts, config, running

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world
COUNT = "bessemer-2021"


@pytest.mark.parametrize("status", [500, 502, 429])
async def test_a_post_discord_py_would_retry_comes_back_and_an_unsubscribe_stops_it(
    tmp_path: Path, world: World, status: int
) -> None:
    fake = world.fake
    channel = world.results
    path = f"/channels/{channel}/messages"
    async with running(world, config(tmp_path, world)) as bot:
        ref = world.ref(channel)
        async with bot.app.db.begin() as conn:
            await sub_rows.subscribe(conn, ref, COUNT, Mode.EVENTS, by="t", at=world.vt.bot.now())
        fake.fail_next(rf"^{path}$", status, retry_after=2.0)
        await bot.ingest(84, 201)
        await bot.app.idle()  # the first attempt is over
        tried = [r for r in fake.requests if r.method == "POST" and r.path == path]
        async with bot.app.db.begin() as conn:
            assert await sub_rows.unsubscribe(conn, ref, COUNT)  # "Unsubscribed this channel"
        await bot.settle()
        later = [r for r in fake.requests if r.method == "POST" and r.path == path]
    assert [r.status for r in tried] == [status]  # sent once: no retry inside discord.py
    assert later == tried  # and none after the unsubscribe
    assert bot_posts(fake, channel) == []
