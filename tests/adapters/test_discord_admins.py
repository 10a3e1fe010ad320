"""Authority stops at the edge of a server: with the bot in two servers (FakeDiscord, the real
discord.py client), Manage Server and admin roles count only in the servers the operator lists
under ``[admins] discord_guilds``; configured user ids count everywhere."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from bot.config import Config
from bot.store import audit as audit_rows
from bot.store import tallies as tally_rows
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
    opts,
    running,
)
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world
from tests.fakes.discord_fake import FakeInteraction

EVE = 555_555_555_555_555_555  # owns another server the bot is in
FRANK = 666_666_666_666_666_666  # has a role named "count-admins" there


def two_servers(tmp_path: Path, world: World, other: int) -> Config:
    """The bot's commands in both servers; only the first is listed for admin rights."""
    cfg = config(tmp_path, world)
    assert cfg.discord is not None
    assert cfg.admins.discord_guilds == {str(world.guild)}
    return replace(cfg, discord=replace(cfg.discord, guilds=(world.guild, other)))


async def slash_in(
    bot: Bot, guild: int, channel: int, user: int, sub: str, **options: object
) -> FakeInteraction:
    ix = await bot.fake.inject_slash_command(
        guild, channel, user, "count", opts(**options), subcommand=sub
    )
    await bot.fake.wait_for(lambda: answered(ix))
    return ix


async def test_the_owner_of_another_server_is_refused_and_audited(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    fake.add_user("eve", user_id=EVE)
    other = fake.add_guild("Somewhere Else", owner_id=EVE)
    lounge = fake.add_channel(other, "lounge")
    fake.add_member(other, EVE, "eve")
    fake.add_member(other, FRANK, "frank", roles=[fake.add_role(other, "count-admins")])
    fake.add_member(other, DAVE, "dave")
    async with running(world, two_servers(tmp_path, world, other)) as bot:
        here = world.guild
        await slash_in(bot, here, world.results, ALICE, "subscribe", count="bessemer-2021")
        figures = "yes=738 no=1798"
        ours = await slash_in(
            bot, here, world.results, BOSS, "update", count="bessemer-2021", figures=figures
        )
        owner = await slash_in(
            bot, other, lounge, EVE, "final", count="bessemer-2021", figures="yes=1300 no=1850"
        )
        by_role = await slash_in(bot, other, lounge, FRANK, "pause", count="bessemer-2021")
        configured = await slash_in(bot, other, lounge, DAVE, "pause", count="bessemer-2021")
        await bot.settle()
        async with bot.app.db.connect() as conn:
            audit = list(reversed(await audit_rows.recent(conn)))
            history = await tally_rows.history(conn, "bessemer-2021")

    assert answer(ours).content.startswith("Accepted update #1 for bessemer-2021")
    for refused, what in ((owner, "declare a count final"), (by_role, "pause a count")):
        shown = answer(refused)
        assert shown.ephemeral
        assert shown.content == f"Error: only admins can {what}; ask an admin of this server"
    assert answer(configured).content.startswith("Accepted update #2 for bessemer-2021")
    assert [(t.votes["yes"], t.state.value) for t in history] == [
        (738, "counting"),
        (738, "paused"),
    ]
    assert [(a.actor, a.action, a.allowed) for a in audit if a.action != "subscribe"] == [
        (f"discord:{BOSS} (boss)", "update", True),
        (f"discord:{EVE} (eve)", "final", False),
        (f"discord:{FRANK} (frank)", "pause", False),
        (f"discord:{DAVE} (dave)", "pause", True),
    ]
    refusal = next(a for a in audit if a.actor.startswith(f"discord:{EVE}"))
    assert refusal.new == "final bessemer-2021 yes=1300 no=1850"
    assert refusal.detail == (
        "refused: Manage Server and admin roles count only in the servers listed in [admins] "
        f"discord_guilds, and {other} is not one"
    )
    # The first server's subscribers never saw the wrong final.
    posted = [m.embeds[0]["title"] for m in bot_posts(fake, world.results) if m.embeds]
    assert posted
    assert not any("Final" in str(m.embeds) for m in bot_posts(fake, world.results))


async def test_admin_settings_that_make_nobody_an_admin_are_warned_about(
    tmp_path: Path, world: World, caplog: pytest.LogCaptureFixture
) -> None:
    other = world.fake.add_guild("Somewhere Else")
    world.fake.add_role(other, "mods")  # only in a server that is not listed
    cfg = config(tmp_path, world)
    admins = replace(cfg.admins, discord_roles=frozenset({"count-admins", "mods"}))
    listing_none = replace(cfg, admins=replace(admins, discord_guilds=frozenset()))
    listing_gone = replace(cfg, admins=replace(admins, discord_guilds={str(world.guild), "42"}))
    for settings in (listing_none, listing_gone):
        with caplog.at_level(logging.WARNING, logger="adapters.discord"):
            async with running(world, settings):
                pass
    warned = [r.getMessage() for r in caplog.records if r.name == "adapters.discord"]
    assert warned == [
        "admins.discord_guilds lists no server: Manage Server and admin roles make nobody an "
        "admin, only admins.discord_users are",
        "admins.discord_roles: no server in admins.discord_guilds has a role 'count-admins'",
        "admins.discord_roles: no server in admins.discord_guilds has a role 'mods'",
        "admins.discord_guilds: the bot is not in server 42",
        "admins.discord_roles: no server in admins.discord_guilds has a role 'mods'",
    ]
