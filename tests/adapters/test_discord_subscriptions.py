"""Subscription options on Discord, with the real discord.py against FakeDiscord: a role ping
on the clinch and the final only (allowed_mentions lists exactly that role), who may set one,
and list in the grammar that recreates it."""

from __future__ import annotations

from pathlib import Path

from bot.store import subscriptions as sub_rows
from bot.subscription import Hear, Wants
from bot.testing.fakes.discord_fake.markdown import visible
from tests.adapters.test_discord import (
    ALICE,
    BOSS,
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
        assert said.endswith(f"significant events only; pinging @{press} on calls and the final.")
        await subscribe(bot, ALICE, world.news, "", mode="all")  # never pinged
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
    fake.add_member(world.guild, 555, "mona", permissions=MENTION_EVERYONE)
    async with running(world, config(tmp_path, world)) as bot:
        refused = await subscribe(bot, ALICE, world.results, f"mention=<@&{quiet}>")
        assert "you may not mention @organisers" in refused
        bot_lacks = await subscribe(bot, 555, world.results, "mention=@organisers")
        assert "tallybot may not mention @organisers" in bot_lacks
        everyone = await subscribe(bot, 555, world.results, f"mention=<@&{world.guild}>")
        assert "never pings @everyone" in everyone
        unknown = await subscribe(bot, BOSS, world.results, "mention=@nobody")
        assert "no role '@nobody' in this server" in unknown
        async with bot.app.db.connect() as conn:
            assert await sub_rows.for_channel(conn, world.ref(world.results)) == []
        press = fake.add_role(world.guild, "Press", mentionable=True)
        ok = await subscribe(bot, ALICE, world.results, "final calls mention=@press")
        assert (
            ok.endswith(f"calls ...; pinging @{press} on calls and the final.") or "pinging" in ok
        )
        sub = await bot.subscription(world.results)
    assert sub.wants == Wants(frozenset({Hear.FINAL, Hear.CALLS}), mention=str(press))
