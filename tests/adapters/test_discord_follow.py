"""Following a count on Discord, with the real discord.py against FakeDiscord: ``follow`` opens
the member's DM channel once (``POST /users/@me/channels``, paced) and the calls come there;
``following`` and ``unfollow`` answer the member alone; a DM whose answer was lost is in the DM
once; a member who blocked the bot, or left every server the bot shares, is unfollowed once;
one who blocks the bot is told so at ``follow``; 100 members following at once are all
answered, without a 429."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.domain.model import TallyState
from bot.settings.loader import Config
from bot.settings.loader import parse as parse_config
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus
from tests.adapters.test_discord import (
    ALICE,
    BOSS,
    DAVE,
    Bot,
    World,
    answer,
    answered,
    bot_posts,
    config,
    count_table,
    opts,
    post_requests,
    running,
    vt,
    world,
)
from tests.adapters.test_discord_tenants import EVE, SECRET, slash_in, tenant_count, two_servers
from tests.fakes.discord_fake.markdown import visible

__all__ = ["vt", "world"]  # the fixtures

DM_OPENS = "/users/@me/channels"


async def follow(bot: Bot, user: int, hears: str = "") -> str:
    values = {"count": "bessemer-2021"} | ({"hears": hears} if hears else {})
    ix = await bot.slash(user, "follow", opts(**values), channel=bot.world.results)
    assert answer(ix).flags & 64  # ephemeral: only they see it
    return visible(answer(ix).content)


def opened(bot: Bot) -> int:
    return len([r for r in bot.fake.requests if r.method == "POST" and r.path == DM_OPENS])


def dm_headlines(bot: Bot, user: int) -> list[str]:
    posts = bot_posts(bot.fake, bot.fake.dm_channel(user))
    return [
        str(p.embeds[0].get("description", "")) + str(p.embeds[0].get("title", "")) for p in posts
    ]


async def clinch_and_final(bot: Bot) -> None:
    await bot.ingest(463, 1100)
    await bot.ingest(738, 1608)  # a majority of the 3,215 received: No clinches
    await bot.settle()
    await bot.ingest(738, 1798, state=TallyState.FINAL)
    await bot.settle()


def faster_dm_opens(tmp_path: Path, world: World) -> Config:
    """``config`` with ``[discord.limits] "DM channels opened" = [100, 5.0]``."""
    fake = world.fake
    return parse_config(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "discord": {
                "api_base": fake.base_url,
                "gateway_url": fake.gateway_url,
                "guilds": [world.guild],
                "admin_guilds": [str(world.guild)],
                "limits": {"DM channels opened": [100, 5.0]},
            },
            "counts": [count_table()],
        },
        tmp_path / "tallybot.toml",
    )


async def test_follow_following_unfollow(tmp_path: Path, world: World) -> None:
    async with running(world, config(tmp_path, world)) as bot:
        said = await follow(bot, ALICE)
        assert said == (
            "You follow bessemer-2021: calls (a side clinching, a call withdrawn, the final), "
            "by direct message. (unfollow bessemer-2021 stops it.)"
        )
        assert opened(bot) == 1
        await clinch_and_final(bot)
        posts = bot_posts(world.fake, world.fake.dm_channel(ALICE))
        assert len(posts) == 2
        assert "clinched" in str(posts[0].embeds).lower()
        assert "final" in str(posts[1].embeds).lower()
        assert bot_posts(world.fake, world.results) == []  # the channel gets nothing of it
        listed = await bot.slash(ALICE, "following", channel=world.news)
        assert visible(answer(listed).content).startswith("You follow, by direct message:")
        assert answer(listed).flags & 64
        gone = await bot.slash(ALICE, "unfollow", opts(count="bessemer-2021"), channel=world.news)
        assert visible(answer(gone).content) == "You no longer follow bessemer-2021."


@pytest.mark.parametrize(
    ("status", "wait"),
    [(503, 0.1), (429, 90.0)],
    ids=["503-retried-under-the-nonce", "429-confirmed-from-the-dm-history"],
)
async def test_a_dm_whose_answer_was_lost_is_there_once(
    tmp_path: Path, world: World, status: int, wait: float
) -> None:
    """Discord made the DM, the answer was lost: retried at once, Discord's nonce drops the copy;
    retried after a long 429 (past the nonce's trust), the DM's history is read first."""
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await follow(bot, ALICE, "final")
        dm = fake.dm_channel(ALICE)
        fake.fail_next(rf"^/channels/{dm}/messages$", status, after_commit=True, retry_after=wait)
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        (delivery,) = [d for d in await bot.deliveries() if d.action is DeliveryAction.DIRECT]
    (posted,) = bot_posts(fake, dm)
    assert delivery.status is DeliveryStatus.SENT
    assert delivery.platform_message_id == str(posted.id)
    reads = [r for r in fake.requests if r.method == "GET" and r.path == f"/channels/{dm}/messages"]
    if status == 429:
        assert [r.status for r in post_requests(fake, dm)] == [429]
        assert len(reads) == 1
    else:
        assert [r.status for r in post_requests(fake, dm)] == [503, 200]


async def test_who_blocked_the_bot_or_left_every_server_is_unfollowed_once(
    tmp_path: Path, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await follow(bot, ALICE, "events")
        await follow(bot, DAVE, "events")
        fake.block_bot(ALICE)
        fake.remove_member(world.guild, DAVE)
        with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
            await clinch_and_final(bot)
        lines = [r.getMessage() for r in caplog.records if "unfollowed" in r.getMessage()]
        assert len(lines) == 2, lines
        assert all("(code 50007)" in line for line in lines)
        for user in (ALICE, DAVE):
            assert len(post_requests(fake, fake.dm_channel(user))) == 1  # refused once, no more
        async with bot.app.db.connect() as conn:
            assert await follow_rows.for_count(conn, "bessemer-2021") == []
            entries = await audit_rows.recent(conn, limit=50)
        assert [e.action for e in entries].count("unfollow") == 2
        assert bot_posts(fake, world.admin) == []  # nobody else is told


async def test_who_blocks_the_bot_is_told_at_follow(tmp_path: Path, world: World) -> None:
    world.fake.block_bot(ALICE)
    async with running(world, config(tmp_path, world)) as bot:
        said = await follow(bot, ALICE)
        assert said.startswith("Error: Discord will not let the bot write to you")
        async with bot.app.db.connect() as conn:
            assert await follow_rows.for_count(conn, "bessemer-2021") == []


@pytest.mark.parametrize("world", [{"dm_opens": (100, 5.0)}], indirect=True)
async def test_a_hundred_members_follow_at_once(tmp_path: Path, world: World) -> None:
    """discord.py waits out a bucket's window on the real clock: the fake and the bot open DMs
    100 per 5 s here (``[discord.limits]``), as for a bot Discord gave a larger limit."""
    fake = world.fake
    members = [900_000_000_000_000_000 + i for i in range(100)]
    for i, member in enumerate(members):
        fake.add_member(world.guild, member, f"member{i}")
    async with running(world, faster_dm_opens(tmp_path, world)) as bot:
        ixs = [
            await fake.inject_slash_command(
                world.guild, world.results, m, "count",
                opts(count="bessemer-2021", hears="final"), subcommand="follow",
            )
            for m in members
        ]  # fmt: skip
        await fake.wait_for(lambda: all(answered(ix) for ix in ixs), timeout=120)
        said = [visible(answer(ix).content) for ix in ixs]
        assert all(s.startswith("You follow bessemer-2021: the final result") for s in said), said
        assert opened(bot) == 100
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        assert all(len(bot_posts(fake, fake.dm_channel(m))) == 1 for m in members)
        assert fake.count_429 == 0


async def test_a_count_made_private_to_its_server_stops_the_dms_of_followers_elsewhere(
    tmp_path: Path, world: World
) -> None:
    """Server A's count, public, followed in A by ALICE and in server B by EVE; A's admin makes
    it private again: its final reaches ALICE, not EVE (sight stops at A's edge, when a message
    is sent, not only at ``follow``); made public again, EVE hears it again."""
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    here = world.guild
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, tenant_count(here, public=True))
        for guild, channel, user in [(here, world.results, ALICE), (other, lounge, EVE)]:
            made = await slash_in(bot, guild, channel, user, "follow", count=SECRET, hears="events")
            assert visible(answer(made).content).startswith(f"You follow {SECRET}")
        said = []
        for verb, extra in [
            ("update", {"figures": "yes=10 no=4"}),  # first results: both hear it
            ("settle", {}),
            ("edit", {"settings": "public=no"}),
            ("final", {"figures": "yes=30 no=4"}),  # queued for ALICE only
            ("edit", {"settings": "public=yes"}),
            ("settle", {}),
            ("correct", {"figures": "yes=31 no=4"}),  # both hear it again
            ("settle", {}),
        ]:
            if verb == "settle":
                await bot.settle()
                continue
            ix = await slash_in(bot, here, world.results, BOSS, verb, count=SECRET, **extra)
            said.append(visible(answer(ix).content))
    assert [s.split(":")[0] for s in said] == [
        f"Accepted update #1 for {SECRET}",
        f"Changed {SECRET}",
        f"Accepted update #2 for {SECRET}",
        f"Changed {SECRET}",
        f"Accepted update #3 for {SECRET}",
    ]
    alice = [h.split("**")[1] for h in dm_headlines(bot, ALICE)]
    eve = [h.split("**")[1] for h in dm_headlines(bot, EVE)]
    assert alice == [
        "First results: Strike leads by 6",
        "Final tally: Strike wins, 30 to 4",
        "Corrected final tally: Strike wins, 31 to 4",
    ]
    assert eve == [alice[0], alice[2]]
