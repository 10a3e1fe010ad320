"""A restart after Discord's nonce window does not double a post (issue 11.3).

Discord deduplicates a repeated send by its nonce for "the past few minutes" only (the fake:
300 s). A post whose answer was lost and whose bot then went down is confirmed from the channel
(the bot's own messages, matched by the key at the end of the footer) once the bot no longer
trusts the nonce (``NONCE_TRUST_S`` after the first attempt), and resent with the nonce before.
The bot, the fake and their shared clock are those of ``test_discord``; the restart is a new
``App`` on the same store, with time moved on in between.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.discord.delivery import NONCE_TRUST_S
from bot.store.outbox import DeliveryStatus
from tests.adapters import test_discord
from tests.adapters.test_discord import (
    ALICE,
    World,
    bot_posts,
    config,
    opts,
    post_requests,
    running,
)

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world


def reads(world: World, channel: int) -> list[object]:
    path = f"/channels/{channel}/messages"
    return [r for r in world.fake.requests if r.method == "GET" and r.path == path]


@pytest.mark.parametrize("down_for", [30.0, 330.0], ids=["within-the-window", "after-it"])
async def test_a_post_whose_answer_was_lost_is_not_doubled_by_a_late_restart(
    tmp_path: Path, world: World, down_for: float
) -> None:
    fake = world.fake
    cfg = config(tmp_path, world)
    async with running(world, cfg) as bot:
        await bot.slash(ALICE, "subscribe", opts(count="bessemer-2021"), channel=world.results)
        # Discord creates the message; its answer is lost, and then the bot goes down.
        fake.fail_next(rf"^/channels/{world.results}/messages$", 503, after_commit=True)
        message = await bot.ingest(84, 201)
        await bot.app.idle()
    world.vt.advance(down_for)
    async with running(world, cfg) as bot:
        await bot.settle()
        (delivery,) = await bot.deliveries()
        stats = bot.app.dispatcher.stats

    (posted,) = bot_posts(fake, world.results)
    assert posted.embeds[0]["description"].startswith(f"**{message.headline}**")
    assert posted.embeds[0]["footer"]["text"].endswith(f" · ref tb{delivery.id}")
    assert delivery.status is DeliveryStatus.SENT
    assert delivery.platform_message_id == str(posted.id)
    sends = post_requests(fake, world.results)
    if down_for < NONCE_TRUST_S:  # the nonce still holds: sent again, Discord drops the copy
        assert [r.status for r in sends] == [503, 200]
        assert reads(world, world.results) == []
    else:  # past it: read the channel, found, not sent again
        assert [r.status for r in sends] == [503]
        assert len(reads(world, world.results)) == 1
        assert stats.confirmed == 1


async def test_without_read_message_history_an_interrupted_post_is_not_guessed(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    cfg = config(tmp_path, world)
    async with running(world, cfg) as bot:
        await bot.slash(ALICE, "subscribe", opts(count="bessemer-2021"), channel=world.results)
        fake.fail_next(rf"^/channels/{world.results}/messages$", 503, after_commit=True)
        await bot.ingest(84, 201)
        await bot.app.idle()
    fake.revoke_read_history(world.results)  # Discord would answer an empty list
    world.vt.advance(330)
    async with running(world, cfg) as bot:
        await bot.settle()
        subscription = await bot.subscription(world.results)
        deliveries = await bot.deliveries()

    assert len(bot_posts(fake, world.results)) == 1  # not posted a second time
    (dead,) = [d for d in deliveries if d.status is DeliveryStatus.DEAD]
    assert dead.last_error is not None
    assert "give it Read Message History" in dead.last_error
    assert not subscription.enabled
    (alert,) = bot_posts(fake, world.admin)
    assert "give it Read Message History" in alert.content
