"""Subscription options on Discord, with the real discord.py against FakeDiscord: a role ping
on the clinch and the final only (allowed_mentions lists exactly that role), who may set one,
and list in the grammar that recreates it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.domain.model import TallyState
from bot.domain.subscription import Hear, Wants
from bot.store import subscriptions as sub_rows
from tests.adapters.test_discord import (
    ALICE,
    MANAGE_CHANNELS,
    MENTION_EVERYONE,
    Bot,
    World,
    answer,
    bot_posts,
    config,
    opts,
    running,
    vt,
    world,
)
from tests.fakes.discord_fake.markdown import visible
from tests.test_format import bessemer_timeline

__all__ = ["vt", "world"]  # the fixtures


async def subscribe(bot: Bot, user: int, channel: int, options: str, mode: str = "") -> str:
    values = {"count": "bessemer-2021", "options": options} | ({"mode": mode} if mode else {})
    ix = await bot.slash(user, "subscribe", opts(**values), channel=channel)
    return visible(answer(ix).content)


async def replay(bot: Bot) -> None:
    for tally in bessemer_timeline():
        await bot.app.pipeline.ingest(tally)
        await bot.settle()


async def test_a_role_is_pinged_on_the_clinch_and_the_final_only(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    press = fake.add_role(world.guild, "press", mentionable=True)
    async with running(world, config(tmp_path, world)) as bot:
        said = await subscribe(bot, ALICE, world.results, f"mention=<@&{press}>")
        assert said.endswith(
            "significant events only; pinging the role press on calls and the final."
        )
        await subscribe(bot, ALICE, world.news, "", mode="all")  # never pinged
        desk = fake.add_role(world.guild, "desk", mentionable=True)
        moved = await subscribe(bot, ALICE, world.news, f"mention=<@&{desk}>", mode="all")
        assert moved.endswith("mention the role desk (was off)."), moved
        await subscribe(bot, ALICE, world.news, "", mode="all")
        listed = visible(answer(await bot.slash(ALICE, "list", channel=world.results)).content)
        assert f"subscribed (events mention=@{press})" in listed
        await replay(bot)
    posts = bot_posts(fake, world.results)
    assert len(posts) == 8  # Bessemer's significant updates
    pinged = [(p.content, p.mention_roles) for p in posts if p.mention_roles]
    assert pinged == [(f"<@&{press}>", [press])] * 2
    clinch, final = [p for p in posts if p.mention_roles]
    assert "clinch" in clinch.embeds[0]["description"].lower() or "1,608" in str(clinch.embeds)
    assert "final" in str(final.embeds[0]).lower()
    for p in posts:
        assert p.mention_everyone is False
        assert p.mentions == []
        # exactly that role may ping, and nothing else (no user, no @everyone, no other role)
        roles = [press] if p.mention_roles else None  # as discord.py sends it
        assert p.allowed_mentions == {"parse": [], **({"roles": roles} if roles else {})}, p
    news = bot_posts(fake, world.news)
    assert len(news) == 12
    assert all(p.mention_roles == [] and p.content == "" for p in news)


async def test_who_may_set_a_mention(tmp_path: Path, world: World) -> None:
    fake = world.fake
    quiet = fake.add_role(world.guild, "organisers")  # not mentionable
    fake.add_member(world.guild, 555, "mona", permissions=MENTION_EVERYONE | MANAGE_CHANNELS)
    async with running(world, config(tmp_path, world)) as bot:
        refused = await subscribe(bot, ALICE, world.results, f"mention=<@&{quiet}>")
        assert "you may not mention @organisers" in refused
        bot_lacks = await subscribe(bot, 555, world.results, "mention=@organisers")
        assert "tallybot may not mention @organisers" in bot_lacks
        everyone = await subscribe(bot, 555, world.results, f"mention=<@&{world.guild}>")
        assert "never pings @everyone" in everyone
        unknown = await subscribe(bot, ALICE, world.results, "mention=@nobody")
        assert "no role '@nobody' in this server" in unknown
        async with bot.app.db.connect() as conn:
            assert await sub_rows.for_channel(conn, world.ref(world.results)) == []
        press = fake.add_role(world.guild, "Press", mentionable=True)
        ok = await subscribe(bot, ALICE, world.results, "final calls mention=@press")
        assert ok.endswith("; pinging the role Press on calls and the final."), ok
        sub = await bot.subscription(world.results)
    assert sub.wants == Wants(frozenset({Hear.FINAL, Hear.CALLS}), mention=str(press))


CREATE_PUBLIC_THREADS = 1 << 35
PIN_MESSAGES = 1 << 51


def headline(post: Any) -> str:
    return visible(str(post.embeds[0]["description"])).split("\n")[0].strip("*")


def alerts(fake: Any, world: World) -> list[str]:
    return [visible(p.content) for p in bot_posts(fake, world.admin)]


async def test_updates_go_into_a_thread_and_the_final_into_the_channel_too(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, CREATE_PUBLIC_THREADS)
    async with running(world, config(tmp_path, world)) as bot:
        said = await subscribe(bot, ALICE, world.results, "thread")
        assert said.endswith("updates in a thread, the final in the channel too.")
        await replay(bot)
        sub = await bot.subscription(world.results)
    in_channel = bot_posts(fake, world.results)
    parent = in_channel[0]
    assert sub.thread_message_id == str(parent.id)
    thread = fake.channels[parent.id]
    assert (thread.type, thread.parent_id) == (11, world.results)
    in_thread = bot_posts(fake, parent.id)
    assert headline(parent).startswith("First results")
    assert len(in_thread) == 7  # the other significant updates, the final among them
    assert [headline(p) for p in in_channel[1:]] == [headline(in_thread[-1])]  # the final
    assert "No union wins" in headline(in_thread[-1])
    assert len({p.nonce for p in [*in_channel, *in_thread]}) == 9
    assert alerts(fake, world) == []


async def test_a_deleted_thread_starts_a_new_one_and_the_admins_are_told(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, CREATE_PUBLIC_THREADS)
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "thread")
        await bot.ingest(84, 201)  # first results: the parent
        await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)  # into its thread
        await bot.settle()
        (first,) = bot_posts(fake, world.results)
        fake._messages[first.id].deleted = True  # the parent: Discord keeps the thread
        await bot.ingest(463, 1100)  # resumed: still into the thread
        await bot.settle()
        assert len(bot_posts(fake, first.id)) == 2
        fake.delete_thread(first.id)
        await bot.ingest(560, 1350)  # 50%: a new parent in the channel
        await bot.settle()
        await bot.ingest(655, 1608)  # the clinch: into the new thread
        await bot.settle()
        sub = await bot.subscription(world.results)
    second = bot_posts(fake, world.results)[-1]
    assert sub.thread_message_id == str(second.id) != str(first.id)
    assert len(bot_posts(fake, second.id)) == 1
    (told,) = alerts(fake, world)
    assert "is gone (deleted?): tallybot started a new thread" in told


async def test_without_thread_rights_it_posts_in_the_channel_and_says_so_once(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake  # the bot may not create threads
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "thread")
        for yes, no, state in ((84, 201, TallyState.PAUSED), (84, 201, TallyState.COUNTING)):
            await bot.ingest(yes, no, state=state)
            await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)
        await bot.settle()
        sub = await bot.subscription(world.results)
    assert len(bot_posts(fake, world.results)) == 3  # all in the channel
    assert not sub.wants.thread
    (told,) = alerts(fake, world)
    assert "may not post in threads" in told


async def test_the_live_scoreboard_is_pinned_until_the_final(tmp_path: Path, world: World) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, PIN_MESSAGES)
    async with running(world, config(tmp_path, world)) as bot:
        said = await subscribe(bot, ALICE, world.results, "live pin")
        assert said.endswith("; the scoreboard pinned while counting.")
        await bot.ingest(84, 201)
        await bot.settle()
        sub = await bot.subscription(world.results)
        board = fake._messages[int(sub.live_message_id or 0)]
        assert board.pinned
        await bot.ingest(463, 1100)
        await bot.settle()
        assert board.pinned
        await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
    assert not board.pinned
    assert alerts(fake, world) == []


async def test_without_pin_rights_the_scoreboard_stays_unpinned_said_once(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "live pin")
        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(463, 1100)
        await bot.settle()
        sub = await bot.subscription(world.results)
    assert sub.wants == Wants(live=True)
    (told,) = alerts(fake, world)
    assert "may not pin messages" in told


async def test_a_ping_whose_answer_was_lost_pings_once(tmp_path: Path, world: World) -> None:
    fake = world.fake
    press = fake.add_role(world.guild, "press", mentionable=True)
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, f"calls mention=<@&{press}>")
        await bot.ingest(560, 1350)
        await bot.settle()
        # The clinch is created, but its answer is lost: the retry carries the same nonce.
        fake.fail_next(rf"^/channels/{world.results}/messages$", 503, after_commit=True)
        await bot.ingest(655, 1608)
        await bot.settle()
    (clinch,) = bot_posts(fake, world.results)
    assert clinch.mention_roles == [press]
    tries = [r for r in fake.requests if r.method == "POST" and r.path.endswith("/messages")]
    assert [r.status for r in tries][-2:] == [503, 200]
    assert tries[-1].json["nonce"] == tries[-2].json["nonce"]


async def test_calls_leads_and_final_over_the_bessemer_timeline(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    picked = {"calls": world.results, "leads": world.union, "final": world.news}
    async with running(world, config(tmp_path, world)) as bot:
        for words, channel in picked.items():
            await subscribe(bot, ALICE, channel, words)
        await replay(bot)
    heads = {words: [headline(p) for p in bot_posts(fake, c)] for words, c in picked.items()}
    assert heads["leads"] == ["First results: No union leads by 117"]
    assert len(heads["calls"]) == 2
    assert "clinch" in heads["calls"][0].lower()
    assert heads["final"] == heads["calls"][1:]
    assert "No union wins" in heads["final"][0]


async def test_a_live_thread_hangs_under_the_pinned_scoreboard(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, CREATE_PUBLIC_THREADS | PIN_MESSAGES)
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "live thread pin")
        await bot.ingest(84, 201)  # the scoreboard, then first results in its thread
        await bot.settle()
        await bot.ingest(463, 1100, state=TallyState.PAUSED)
        await bot.settle()
        sub = await bot.subscription(world.results)
    (board,) = bot_posts(fake, world.results)
    assert str(board.id) == sub.live_message_id
    assert board.pinned
    assert fake.channels[board.id].parent_id == world.results  # the thread on the scoreboard
    first, paused = bot_posts(fake, board.id)
    assert headline(first).startswith("First results")
    assert paused.nonce != first.nonce
    assert alerts(fake, world) == []


async def test_a_thread_reply_in_doubt_past_the_nonce_window_is_found_in_its_thread(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, CREATE_PUBLIC_THREADS)
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "thread")
        await bot.ingest(84, 201)  # the parent
        await bot.settle()
        (parent,) = bot_posts(fake, world.results)
        fake.fail_next(rf"^/channels/{parent.id}/messages$", 503, after_commit=True)
        await bot.ingest(463, 1100, state=TallyState.PAUSED)  # posted, its answer lost
        await bot.app.idle()
        world.vt.advance(120)  # Discord's nonce no longer trusted: the thread is read first
        await bot.settle()
    (reply,) = bot_posts(fake, parent.id)
    reads = [r for r in fake.requests if r.method == "GET" and r.path.endswith("/messages")]
    assert [r.path for r in reads] == [f"/channels/{parent.id}/messages"]
    assert "paus" in headline(reply).lower()


async def test_in_a_thread_the_clinch_pings_there_and_the_final_once_in_the_channel(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.grant_bot(world.guild, CREATE_PUBLIC_THREADS)
    press = fake.add_role(world.guild, "press", mentionable=True)
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, f"thread mention=@{press}")
        await replay(bot)
    parent, final = bot_posts(fake, world.results)
    in_thread = bot_posts(fake, parent.id)
    pinged = [p for p in [parent, *in_thread, final] if p.mention_roles]
    assert [headline(p) for p in pinged] == [headline(in_thread[4]), headline(final)]
    assert "clinch" in headline(pinged[0]).lower()
    assert in_thread[-1].mention_roles == []  # the final's copy in the thread pings nobody
    assert final.mention_roles == [press]
