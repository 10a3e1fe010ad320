"""Discord announcement channels (issue 31), with the real discord.py against FakeDiscord: a
``publish`` subscription's calls and final crossposted to every following channel with one
request each, exactly once across a lost answer and a kill; the hourly bound (calls give way to
the final); ``via=`` following from another server, with and without Manage Webhooks, and its
end with ``unsubscribe``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from adapters.slack.commands import SUPPORTS as SLACK
from bot.commands.hearing import parse_wants
from bot.commands.request import Request
from bot.commands.subscribing import checked_wants
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Extra, Platform, Wants
from bot.errors import CommandError
from bot.ops.doctor import doctor
from bot.settings.loader import Config
from bot.settings.loader import parse as parse_config
from bot.store import Database, outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus, NewDelivery
from bot.store.schema import outbox as outbox_table
from tests.adapters import test_discord, test_doctor
from tests.adapters.test_discord import (
    ALICE,
    MANAGE_CHANNELS,
    Bot,
    World,
    answer,
    answered,
    bot_posts,
    count_table,
    opts,
    running,
)
from tests.adapters.test_discord_subscriptions import replay
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.markdown import visible
from tests.fakes.discord_fake.models import FLAG_IS_CROSSPOST, MANAGE_WEBHOOKS

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world
COUNT = "bessemer-2021"
BOB = 555_555_555_555_555_555  # manages channels in the other server


@dataclasses.dataclass
class Press:
    """The operator's announcement channel in its server, two other servers' channels that
    follow it (through Discord's menu), and one more server with a channel of its own."""

    announce: int
    followers: list[int]
    other_guild: int
    other: int


def press(world: World) -> Press:
    fake = world.fake
    announce = fake.add_channel(world.guild, "announcements", kind=5)
    followers = []
    for name in ("Local 1", "Local 2"):
        guild = fake.add_guild(name)
        followers.append(fake.add_channel(guild, "news"))
        fake.follow(announce, followers[-1])
    other_guild = fake.add_guild("Local 3")
    other = fake.add_channel(other_guild, "updates")
    fake.add_member(other_guild, BOB, "bob", permissions=MANAGE_CHANNELS)
    return Press(announce, followers, other_guild, other)


def settings(tmp_path: Path, world: World, p: Press, **limits: list[int]) -> Config:
    """As ``test_discord.config``, with the command synced to the other server too, the
    announcement channel that may be followed for the count, and ``limits``."""
    fake = world.fake
    discord: dict[str, Any] = {
        "api_base": fake.base_url,
        "gateway_url": fake.gateway_url,
        "guilds": [world.guild, p.other_guild],
        "admin_guilds": [str(world.guild)],
        "announcements": {COUNT: str(p.announce)},
    }
    if limits:
        discord["limits"] = limits
    return parse_config(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "admins": {"alerts": [f"discord:{world.guild}/{world.admin}"]},
            "discord": discord,
            "counts": [count_table() | {"public": True}],  # other servers may follow it
        },
        tmp_path / "tallybot.toml",
    )


def crossposts(fake: FakeDiscord, channel: int) -> list[Any]:
    return [r for r in fake.requests if r.method == "POST" and r.path.endswith("/crosspost")]


def copies(fake: FakeDiscord, channel: int) -> list[Any]:
    return [m for m in fake.messages(channel) if m.flags & FLAG_IS_CROSSPOST]


async def publish_steps(bot: Bot) -> list[Any]:
    return [d for d in await bot.deliveries() if d.action is DeliveryAction.PUBLISH]


async def slash_in(bot: Bot, guild: int, channel: int, user: int, sub: str, **values: Any) -> str:
    ix = await bot.fake.inject_slash_command(
        guild, channel, user, "count", opts(**values), subcommand=sub
    )
    await bot.fake.wait_for(lambda: answered(ix))
    return visible(answer(ix).content)


async def test_the_calls_and_the_final_are_published_to_every_follower(
    tmp_path: Path, world: World
) -> None:
    fake, p = world.fake, press(world)
    async with running(world, settings(tmp_path, world, p)) as bot:
        said = await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="publish"
        )
        assert said.endswith("calls and the final published to every following channel."), said
        listed = await slash_in(bot, world.guild, p.announce, ALICE, "list")
        assert "subscribed (events publish)" in listed
        await replay(bot)
        steps = await publish_steps(bot)
    posts = bot_posts(fake, p.announce)
    assert len(posts) == 8  # Bessemer's significant updates, posted once each
    published = [q for q in posts if q.flags & 1]  # CROSSPOSTED
    assert len(published) == len(steps) == 2  # the clinch and the final
    assert [d.status for d in steps] == [DeliveryStatus.SENT] * 2
    assert [d.platform_message_id for d in steps] == [str(q.id) for q in published]
    assert [r.status for r in crossposts(fake, p.announce)] == [200, 200]
    for follower in p.followers:  # Discord's copies, no request of the bot's in there
        got = copies(fake, follower)
        assert [m.embeds for m in got] == [q.embeds for q in published]
        assert all(m.mention_roles == [] and m.webhook_id is not None for m in got)
        assert not [r for r in fake.requests if f"/channels/{follower}/" in r.path]


async def test_publish_is_refused_outside_an_announcement_channel(
    tmp_path: Path, world: World
) -> None:
    p = press(world)
    async with running(world, settings(tmp_path, world, p)) as bot:
        said = await slash_in(
            bot, world.guild, world.results, ALICE, "subscribe", count=COUNT, options="publish"
        )
        assert said == "Error: publish works in a Discord announcement channel only; leave it out"
        thread = await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="publish thread"
        )
        assert "publish crossposts posts in the channel, not a thread" in thread
        async with bot.app.db.connect() as conn:
            assert await sub_rows.for_count(conn, COUNT) == []


async def test_publish_and_via_are_refused_on_other_platforms() -> None:
    where = ChannelRef(Platform("slack"), "T1", "C1")
    slack = Request(where, "U1", "u", "", supports=frozenset(Extra))
    no_publish = dataclasses.replace(slack, supports=frozenset(Extra) - {Extra.PUBLISH})
    with pytest.raises(CommandError, match="announcement channel only"):
        await checked_wants(parse_wants(["publish"]), no_publish)
    with pytest.raises(CommandError, match="via= is not supported on Slack"):
        await checked_wants(parse_wants(["via=#123"]), slack)
    with pytest.raises(CommandError, match="leave out the rest"):
        await checked_wants(parse_wants(["via=#123", "live"]), slack)


@pytest.mark.parametrize("cut", ["lost-answer", "kill"])
async def test_a_publish_cut_off_is_published_once(tmp_path: Path, world: World, cut: str) -> None:
    fake, p = world.fake, press(world)
    cfg = settings(tmp_path, world, p)
    async with running(world, cfg) as bot:
        await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="final publish"
        )
        if cut == "lost-answer":  # Discord publishes; its answer is lost
            fake.fail_next(r"/crosspost$", 503, after_commit=True)
        await replay(bot)
        (step,) = await publish_steps(bot)
        assert step.status is DeliveryStatus.SENT
    if cut == "kill":  # as kill -9 leaves it: published, not yet recorded
        async with Database(cfg.store_url) as db, db.begin() as conn:
            await conn.execute(
                update(outbox_table)
                .where(outbox_table.c.id == step.id)
                .values(status="sending", sent_at=None, claimed_by=None, claim_expires_at=None)
            )
        world.vt.advance(600)
        async with running(world, cfg) as bot:
            await bot.settle()
            (step,) = await publish_steps(bot)
    assert step.status is DeliveryStatus.SENT
    first = 503 if cut == "lost-answer" else 200
    assert [r.status for r in crossposts(fake, p.announce)] == [first, 400]
    assert crossposts(fake, p.announce)[-1].response["code"] == 40033  # published already
    for follower in p.followers:
        assert len(copies(fake, follower)) == 1  # the final, once


async def test_calls_give_way_to_the_final_under_the_hourly_bound(
    tmp_path: Path, world: World
) -> None:
    fake, p = world.fake, press(world)
    fake.publish_limit = 2
    cfg = settings(tmp_path, world, p, **{"publishes per channel": [2, 3600]})
    async with running(world, cfg) as bot:
        await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="publish"
        )
        async with bot.app.db.begin() as conn:  # one publish earlier in the hour
            (earlier,) = await outbox.enqueue(
                conn,
                [
                    NewDelivery(
                        subscription_id=None,
                        channel=world.ref(p.announce),
                        count_id=COUNT,
                        tally_seq=None,
                        action=DeliveryAction.PUBLISH,
                        significant=True,
                        payload="{}",
                        created_at=world.vt.bot.now(),
                    )
                ],
            )
            await conn.execute(
                update(outbox_table)
                .where(outbox_table.c.id == earlier)
                .values(status="sent", sent_at=world.vt.bot.now())
            )
        fake.publish_limit = 1  # and Discord counted it
        await replay(bot)
        steps = [d for d in await publish_steps(bot) if d.id != earlier]
    clinch, final = steps
    assert clinch.status is DeliveryStatus.SUPERSEDED
    assert clinch.last_error is not None
    assert "kept for the final" in clinch.last_error
    assert final.status is DeliveryStatus.SENT
    assert len(crossposts(fake, p.announce)) == 1
    assert fake.count_429 == 0  # the bot kept under the bound itself
    for follower in p.followers:
        assert len(copies(fake, follower)) == 1


async def test_a_second_final_within_the_hour_waits_for_its_turn(
    tmp_path: Path, world: World
) -> None:
    fake, p = world.fake, press(world)
    fake.publish_limit = 1
    cfg = settings(tmp_path, world, p, **{"publishes per channel": [1, 3600]})
    async with running(world, cfg) as bot:
        await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="final publish"
        )
        start = world.vt.bot.monotonic()
        await replay(bot)
        await bot.ingest(1608, 875, state=TallyState.FINAL)  # a corrected final
        await bot.settle()
        took = world.vt.bot.monotonic() - start
        steps = await publish_steps(bot)
    assert [d.status for d in steps] == [DeliveryStatus.SENT] * 2
    times = [r.time for r in crossposts(fake, p.announce) if r.status == 200]
    assert len(times) == 2
    assert times[1] - times[0] >= 3600  # within Discord's bound, on the fake's clock
    assert took >= 3600
    for follower in p.followers:
        assert len(copies(fake, follower)) == 2


async def test_a_channel_of_another_server_follows_with_manage_webhooks(
    tmp_path: Path, world: World
) -> None:
    fake, p = world.fake, press(world)
    async with running(world, settings(tmp_path, world, p)) as bot:
        await slash_in(
            bot, world.guild, p.announce, ALICE, "subscribe", count=COUNT, options="publish"
        )
        via = f"via=<#{p.announce}>"
        lacking = await slash_in(
            bot, p.other_guild, p.other, BOB, "subscribe", count=COUNT, options=via
        )
        assert lacking == (
            "Error: tallybot needs Manage Webhooks in this channel to follow an announcement "
            "channel: give it that permission here, then subscribe again"
        )
        assert fake.followers(p.announce) == sorted(p.followers)
        wrong = await slash_in(
            bot, p.other_guild, p.other, BOB, "subscribe", count=COUNT, options=f"via=#{p.other}"
        )
        assert wrong == f"Error: #{p.other} is not {COUNT}'s: use via=#{p.announce}"
        fake.grant_bot(p.other_guild, MANAGE_WEBHOOKS)
        said = await slash_in(
            bot, p.other_guild, p.other, BOB, "subscribe", count=COUNT, options=via
        )
        assert said.startswith(f"Subscribed this channel to {COUNT}: what the announcement"), said
        assert p.other in fake.followers(p.announce)
        listed = await slash_in(bot, p.other_guild, p.other, BOB, "list")
        assert f"subscribed (via=#{p.announce})" in listed
        await replay(bot)
        sub = await bot_sub(bot, p)
        assert sub.follow_webhook is not None
        gone = await slash_in(bot, p.other_guild, p.other, BOB, "unsubscribe", count=COUNT)
        assert (
            gone == f"Unsubscribed this channel from {COUNT}. It no longer follows #{p.announce}."
        )
    assert p.other not in fake.followers(p.announce)
    assert len(copies(fake, p.other)) == 2  # the clinch and the final, Discord's copies
    assert bot_posts(fake, p.other) == []  # no post of its own
    writes = [r for r in fake.requests if r.method != "GET" and str(p.other) in r.path]
    assert writes == []  # the follow is a request to the announcement channel


async def bot_sub(bot: Bot, p: Press) -> Any:
    async with bot.app.db.connect() as conn:
        (sub,) = await sub_rows.for_channel(
            conn, ChannelRef(Platform("discord"), str(p.other_guild), str(p.other))
        )
    return sub


def test_slack_offers_no_publish() -> None:
    assert Extra.PUBLISH not in SLACK


async def test_doctor_says_a_publishing_channel_is_no_announcement_channel(
    tmp_path: Path,
) -> None:
    async with FakeDiscord(token=test_doctor.DISCORD_TOKEN) as fake:
        guild = fake.add_guild("Bessemer Watch")
        news = fake.add_channel(guild, "news", kind=5)
        text = fake.add_channel(guild, "text")
        outside = fake.add_channel(fake.add_guild("Local 3"), "updates")
        fake.revoke_send(outside)  # Discord posts there, not the bot: not the bot's to check
        env = {"DISCORD_TOKEN": test_doctor.DISCORD_TOKEN}
        tables = {"discord": {"api_base": fake.base_url, "gateway_url": fake.gateway_url}}
        path = test_doctor.write_config(tmp_path, tables)

        def ref(g: int, channel: int) -> ChannelRef:
            return ChannelRef(Platform("discord"), str(g), str(channel))

        await test_doctor.subscribe(
            path,
            env,
            (ref(guild, news), Wants(publish=True)),
            (ref(guild, text), Wants(publish=True)),
            (ref(fake.channels[outside].guild_id or 0, outside), Wants(via=str(news))),
        )
        status, lines = await doctor(path, env)
    assert status == 1
    assert [line for line in lines if "discord:" in line] == [
        f"{ref(guild, text)}: the channel is not an announcement channel (a subscription "
        "publishes); fix: make #text an announcement channel, or subscribe again without publish"
    ]
