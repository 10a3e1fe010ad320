"""Authority stops at the edge of a server: with the bot in two servers (FakeDiscord, the real
discord.py client), Manage Server and admin roles count for the operator's counts only in the
servers the operator lists under ``[discord] admin_guilds`` (the Discord plug-in's admin policy,
``adapters.discord.admins``), where its private counts are seen at all; configured user ids
count everywhere. (A server's own counts: test_discord_tenants.py.)"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.discord.settings import DiscordSettings
from bot.domain.subscription import Platform
from bot.settings.loader import Config
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
    settings = cfg.settings("discord")
    assert settings.admin_guilds == {str(world.guild)}
    return with_settings(cfg, settings.model_copy(update={"guilds": (world.guild, other)}))


def with_settings(cfg: Config, settings: DiscordSettings) -> Config:
    return replace(cfg, platforms={**cfg.platforms, Platform("discord"): settings})


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
    # The operator's private count does not exist in a server the operator does not list.
    for refused in (owner, by_role):
        shown = answer(refused)
        assert shown.ephemeral
        assert shown.content == "Error: unknown count 'bessemer-2021'"
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
    assert refusal.detail == "refused: bessemer-2021 is a private count of operator"
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
    roles = cfg.settings("discord").model_copy(
        update={"admin_roles": frozenset({"count-admins", "mods"})}
    )
    listing_none = with_settings(cfg, roles.model_copy(update={"admin_guilds": frozenset()}))
    listing_gone = with_settings(
        cfg, roles.model_copy(update={"admin_guilds": frozenset({str(world.guild), "42"})})
    )
    for settings in (listing_none, listing_gone):
        with caplog.at_level(logging.WARNING, logger="adapters.discord.admins"):
            async with running(world, settings):
                pass
    warned = [r.getMessage() for r in caplog.records if r.name == "adapters.discord.admins"]
    assert warned == [
        "discord.admin_guilds lists no server: Manage Server and admin roles make nobody an "
        "admin, only discord.admin_users are",
        "discord.admin_roles: no server in discord.admin_guilds has a role 'count-admins'",
        "discord.admin_roles: no server in discord.admin_guilds has a role 'mods'",
        "discord.admin_guilds: the bot is not in server 42",
        "discord.admin_roles: no server in discord.admin_guilds has a role 'mods'",
    ]
