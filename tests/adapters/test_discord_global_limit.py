"""Discord's global limit read from its 429s: the operator sets the granted figure, and when
Discord shows a smaller one (a global 429, which the dispatcher waits out and retries:
discord.py retries nothing) the bot lowers its pace to what Discord let through in the window,
and draws no more 429s."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.discord.delivery import GLOBAL
from bot.domain.subscription import Mode, Platform
from bot.store import subscriptions as sub_rows
from tests.adapters import test_discord
from tests.adapters.test_discord import World, bot_posts, config, running

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world
GRANTED = 20
"""What the fake lets through per second; the bot is set for Discord's default, 50."""
CHANNELS = 90


@pytest.mark.parametrize(
    "world", [{"global_limit_per_s": GRANTED, "global_window_s": 1.0}], indirect=True
)
async def test_a_smaller_global_limit_is_learned_from_the_first_global_429(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    channels = [fake.add_channel(world.guild, f"count-{i}") for i in range(CHANNELS)]
    async with running(world, config(tmp_path, world)) as bot:
        async with bot.app.db.begin() as conn:
            for channel in channels:
                ref = world.ref(channel)
                await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", Mode.EVENTS, by="t", at=world.vt.bot.now()
                )
        world.vt.advance(2.0)  # past the window of the start-up requests
        began = len(fake.requests)
        await bot.ingest(84, 201)
        await bot.settle()
        pacer = bot.app.dispatcher.pacers[Platform("discord")]
        learned = pacer.limit_of(GLOBAL)
        seen = bot.adapter.global_429s.seen
    requests = fake.requests[began:]
    limited = [r.time for r in requests if r.status == 429]
    accepted = sorted(r.time for r in requests if r.status != 429)
    assert limited, "the fake let everything through: nothing was learned"
    assert all(r.response["global"] for r in requests if r.status == 429)
    assert seen == len(limited)  # every one of them was seen
    first = min(limited)
    # Once the window of the first 429 is over, no more: the pace is Discord's figure...
    assert max(limited) < first + 1.0, sorted(t - first for t in limited)
    assert learned == GRANTED
    # ...and nearly all of it is used afterwards (the fake's clock also runs in real time
    # while the bot's stands still between its sleeps), never more.
    later = [t for t in accepted if t >= first + 1.0]
    most = max(sum(1 for u in later if t <= u < t + 1.0) for t in later)
    # (the deliveries a 429 refused come back through the dispatcher's own retry, not
    # discord.py's, so the second after the window may be spent partly waiting for them)
    assert GRANTED // 2 <= most <= GRANTED
    for channel in channels:
        assert len(bot_posts(fake, channel)) == 1  # each once
