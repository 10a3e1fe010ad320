"""Discord's global limit: the bot's pace counts each request's window from its answer's
arrival, not from the end of its handling; and, read from its 429s: the operator sets the
granted figure, and when Discord shows a smaller one (a global 429, which the dispatcher waits
out and retries: discord.py retries nothing) the bot lowers its pace to what Discord let through
in the window, and draws no more 429s until the lowered figure climbs back."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.delivery import DISCORD_LIMITS, GLOBAL
from bot.delivery.attempt import DeliveryPace
from bot.delivery.pacing import Pacer, Window
from bot.delivery.ratelimit import RECOVER_AFTER
from bot.domain.message import Notice
from bot.domain.subscription import Mode, Platform
from bot.store import subscriptions as sub_rows
from tests.adapters import test_discord
from tests.adapters.test_discord import Bot, World, bot_posts, config, running
from tests.test_ratelimit import Sleeper

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world
HANDLING_S = 0.3
"""What discord.py takes, in the first test, to read and handle an answer once its headers
came."""
GRANTED = 20
"""What the fake lets through per second; the bot is set for Discord's default, 50."""
CHANNELS = 90


async def test_a_requests_slot_closes_when_its_answer_arrives_not_once_it_is_handled(
    tmp_path: Path, world: World
) -> None:
    clock = world.vt.bot

    async def handling(*_: object) -> None:
        clock.advance(HANDLING_S)  # the body read (once the headers came), then handled

    class SlowToHandle(DiscordAdapter):
        def http_trace(self) -> aiohttp.TraceConfig:
            trace = super().http_trace()
            trace.on_response_chunk_received.append(handling)
            return trace

    channels = [world.fake.add_channel(world.guild, f"count-{i}") for i in range(3)]
    async with running(world, config(tmp_path, world), kind=SlowToHandle) as bot:
        sleep = Sleeper(clock)  # only this pacer's waits move the clock, and the handling
        one = DISCORD_LIMITS.with_windows({GLOBAL: Window(1, 1.0)})  # a request a second
        pace = DeliveryPace(Pacer(one, clock, sleep))
        clock.advance(1.1)  # past the window of the start-up requests
        for n, channel in enumerate(channels):
            await bot.adapter.post(world.ref(channel), Notice(f"post {n}"), key=f"k{n}", pace=pace)
    assert [len(bot_posts(world.fake, c)) for c in channels] == [1, 1, 1]
    # Each waited a window (and the 0.2% margin) from the answer to the one before it, which
    # came on the fake's loopback at once: not from the end of its handling, 0.3 s later.
    assert sleep.slept == pytest.approx([1.002 - HANDLING_S] * 2)


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
        learned = learning(bot)
        world.vt.advance(2.0)  # past the window of the start-up requests
        began = len(fake.requests)
        await bot.ingest(84, 201)
        await bot.settle()
        seen = bot.adapter.global_429s.seen
    requests = fake.requests[began:]
    limited = [r.time for r in requests if r.status == 429]
    assert limited, "the fake let everything through: nothing was learned"
    assert all(r.response["global"] for r in requests if r.status == 429)
    assert seen == len(limited)  # every one of them was seen
    assert learned[0] == GRANTED  # the first 429 taught Discord's figure
    # Once the window of the first 429 is over, no more, until the lowered figure may climb
    # back (RECOVER_AFTER windows later: by the bot's clock, which the fake's never lags):
    # the pace is Discord's figure, and nearly all of it is used, never more.
    first = min(limited)
    until = first + RECOVER_AFTER
    assert [t for t in limited if first + 1.0 <= t < until] == [], sorted(
        t - first for t in limited
    )
    later = sorted(r.time for r in requests if r.status != 429 and first + 1.0 <= r.time < until)
    most = max(sum(1 for u in later if t <= u < t + 1.0) for t in later)
    # (the fake's clock also runs in real time while the bot's stands still between its sleeps;
    # the deliveries a 429 refused come back through the dispatcher's own retry, not
    # discord.py's, so the second after the window may be spent partly waiting for them)
    assert GRANTED // 2 <= most <= GRANTED
    for channel in channels:
        assert len(bot_posts(fake, channel)) == 1  # each once


def learning(bot: Bot) -> list[int]:
    """The global limit the dispatcher paces for right after each global 429 it is told of
    (read then: a lowered limit climbs back later, by the bot's clock)."""
    pacer = bot.app.dispatcher.pacers[Platform("discord")]
    watch = bot.adapter.global_429s
    told = watch.said
    assert told is not None
    learned: list[int] = []

    def said(name: str, retry_after: float) -> None:
        told(name, retry_after)
        learned.append(pacer.limit_of(GLOBAL))

    watch.said = said
    return learned
