"""Alerts go to whoever owns the count (issue 27, part 6), over FakeDiscord and the real
discord.py client: a server's count is told about in that server (the channel it was made in,
or the one its admins chose with ``/count alerts here``), never in the operator's channel; the
operator's counts in the operator's. And the bot removed from a server it posted in 25 channels
of is one alert that says so (issue 25, part 8), not 25."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.store import subscriptions as sub_rows
from tests import charts
from tests.adapters.test_discord import ALICE, World, bot_posts, running
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world
from tests.adapters.test_discord_subscriptions import alerts
from tests.adapters.test_discord_tenants import EVE, slash_in, two_servers
from tests.fakes.discord_fake.markdown import visible
from tests.helpers import tally


def texts(world: World, channel: int) -> list[str]:
    return [visible(p.content) for p in bot_posts(world.fake, channel)]


async def test_a_servers_alerts_go_to_that_server(tmp_path: Path, world: World) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge, ops = fake.add_channel(other, "lounge"), fake.add_channel(other, "ops")
    fake.add_member(other, EVE, "eve")
    settings = "choices=yes:Yes,no:No"
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        made = await slash_in(
            bot, other, lounge, EVE, "create", count="b-vote", title="B vote", settings=settings
        )
        pipeline = bot.app.pipeline
        await pipeline.ingest(tally(10, 4, count_id="b-vote"))
        await pipeline.ingest(tally(9, 4, count_id="b-vote"))  # a decrease: rejected
        await bot.settle()
        in_lounge = texts(world, lounge)
        moved = await slash_in(bot, other, ops, EVE, "alerts", action="here")
        shown = await slash_in(bot, other, ops, EVE, "alerts")
        by_member = await slash_in(bot, world.guild, world.results, ALICE, "alerts", action="off")
        await pipeline.ingest(tally(8, 4, count_id="b-vote"))
        await bot.ingest(84, 201)
        await pipeline.ingest(tally(80, 201))  # the operator's count, rejected
        await bot.settle()
    assert made.followups[-1].content.startswith("Created b-vote")
    assert len(in_lounge) == 1
    assert "b-vote" in in_lounge[0]
    assert moved.followups[-1].content.startswith(
        "Alerts about the counts of this server come to this channel now"
    )
    assert shown.followups[-1].content == (f"This server's alerts go to discord:{other}/{ops}.")
    assert by_member.followups[-1].content.startswith("Error: only admins can choose where")
    (in_ops,) = texts(world, ops)
    assert "b-vote" in in_ops
    assert texts(world, lounge) == in_lounge  # nothing more there
    told = alerts(fake, world)  # the operator's channel: the operator's count only
    assert len(told) == 1
    assert "bessemer-2021" in told[0]
    assert "b-vote" not in " ".join(told)


async def test_the_bot_removed_from_a_server_is_one_alert_that_says_so(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    channels = [fake.add_channel(other, f"news-{i}") for i in range(25)]
    lost = fake.add_channel(world.guild, "lost")  # in the operator's server: access lost
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            for channel in [*channels, lost]:
                guild = world.guild if channel == lost else other
                where = ChannelRef(Platform("discord"), str(guild), str(channel))
                await sub_rows.subscribe(
                    conn, where, "bessemer-2021", Mode.ALL, by="test", at=world.vt.bot.now()
                )
        fake.remove_bot(other)
        fake.revoke_send(lost)
        assert bot.adapter.shards is not None
        clients = list(bot.adapter.shards.clients.values())
        await fake.gateway.flush()
        for _ in range(1000):  # the client reads GUILD_DELETE
            if all(c.get_guild(other) is None for c in clients):
                break
            await asyncio.sleep(0)
        assert all(c.get_guild(other) is None for c in clients)
        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)  # nothing left to stop
        await bot.settle()
        async with bot.app.db.connect() as conn:
            subs = await sub_rows.for_count(conn, "bessemer-2021")
    assert subs == []  # every one stopped (disabled)
    told = alerts(fake, world)
    assert len(told) == 2, told
    removed = next(t for t in told if "removed" in t)
    assert (
        f"tallybot stopped posting in 25 channels of discord:{other}: the bot was removed "
        "from the server (bessemer-2021 in discord:"
    ) in removed
    assert "Invite it again" in removed
    assert "View Channel" not in removed
    assert "and 15 more" in removed
    access = next(t for t in told if "removed" not in t)
    assert f"1 channel of discord:{world.guild}: the bot lost access" in access
    assert "View Channel" in access


async def test_a_chart_that_could_not_be_drawn_is_told_to_its_place_once(
    tmp_path: Path, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27, part 6: a tenant's count whose charts fail is told in the tenant's alerts
    channel, once per cause however many charts fail, and never in the operator's."""
    monkeypatch.setattr("bot.charts.chart.render_chart", charts.broken)
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    settings = "choices=yes:Yes,no:No"
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        await slash_in(
            bot, other, lounge, EVE, "create", count="b-vote", title="B vote", settings=settings
        )
        answers = []
        for yes in (10, 11, 12):
            await bot.app.pipeline.ingest(tally(yes, 4, count_id="b-vote"))
            shown = await slash_in(bot, other, lounge, EVE, "chart", count="b-vote")
            answers.append(shown.followups[-1].content)
        await bot.settle()
        told_once = [t for t in texts(world, lounge) if "chart" in t]
        world.vt.advance(2 * 3600)  # a new window: told again
        await slash_in(bot, other, lounge, EVE, "chart", count="b-vote")
        await bot.settle()
        told_later = [t for t in texts(world, lounge) if "chart" in t]
    assert answers == ["The chart of b-vote could not be drawn just now; try again later."] * 3
    (alert,) = told_once
    assert "The chart of b-vote could not be drawn: drawing it failed" in alert
    assert len(told_later) == 2
    assert not [t for t in alerts(fake, world) if "b-vote" in t]  # the operator hears nothing
