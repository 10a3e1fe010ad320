"""``tallybot invite``: the install URL asks for the bot's scopes and exactly the permissions it
needs, checked bit by bit against discord.py's own permission flags; and the bot, added with
that link to a server that grants it nothing more, does all it does (issue 28 part 1)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import discord
import pytest

from adapters.discord.invite import NEEDED, SCOPES, Permission, invite_url, permissions
from adapters.discord.tree import intents
from bot.runtime.cli import main
from tests.adapters import test_discord
from tests.adapters.test_discord import ALICE, World, answered, bot_posts, config, opts, running
from tests.adapters.test_discord_subscriptions import replay, subscribe
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.markdown import visible
from tests.fakes.discord_fake.models import (
    PRIVILEGED_INTENTS,
    VIEW_CHANNEL,
    RecordedRequest,
)

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world

APP_ID = "812345678901234567"


def test_each_flag_is_discords_bit() -> None:
    for flag in Permission:
        assert flag.name is not None
        assert discord.Permissions(**{flag.name.lower(): True}).value == flag.value, flag


def test_the_permission_integer_is_the_needed_flags_and_nothing_else() -> None:
    expected = discord.Permissions(
        view_channel=True,
        send_messages=True,
        send_messages_in_threads=True,
        embed_links=True,
        attach_files=True,
        read_message_history=True,
        create_public_threads=True,  # a subscription's thread
        pin_messages=True,  # a subscription's pin
    )
    assert permissions() == expected.value == 2_252_109_051_448_320
    assert permissions().bit_count() == len(NEEDED) == 8
    assert not discord.Permissions(permissions()).administrator
    assert not discord.Permissions(permissions()).manage_messages


def test_invite_url() -> None:
    url = invite_url(APP_ID)
    assert url == (
        f"https://discord.com/oauth2/authorize?client_id={APP_ID}"
        "&scope=bot+applications.commands&permissions=2252109051448320"
    )
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert query == {
        "client_id": [APP_ID],
        "scope": [" ".join(SCOPES)],
        "permissions": [str(permissions())],
    }


def test_cli_invite(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_APPLICATION_ID", raising=False)
    assert main(["invite", "--client-id", APP_ID]) == 0
    assert capsys.readouterr().out == invite_url(APP_ID) + "\n"
    assert main(["invite"]) == 2
    assert "give --client-id or set DISCORD_APPLICATION_ID" in capsys.readouterr().err
    monkeypatch.setenv("DISCORD_APPLICATION_ID", APP_ID)
    assert main(["invite"]) == 0
    assert f"client_id={APP_ID}&" in capsys.readouterr().out
    assert main(["invite", "--client-id", "my-bot"]) == 2
    assert "'my-bot' is not a Discord application id" in capsys.readouterr().err


# ------------------------------------------------------- the invite as Discord applies it
# A server whose @everyone may only look: the bot may do there what its role from the shipped
# install link grants and nothing else (the fake makes the role from the link, as Discord does).
# Every right the bot uses must be in the link: a thread, a pinned live scoreboard, charts,
# reading its own history, in a channel and in a thread.

SHIPPED = {"invite": invite_url(APP_ID)}


def without(right: Permission) -> dict[str, str]:
    """The shipped link short of ``right``."""
    short = permissions(tuple(p for p in NEEDED if p is not right))
    return {"invite": invite_url(APP_ID).replace(str(permissions()), str(short))}


async def _everything_the_bot_does(tmp_path: Path, world: World) -> list[RecordedRequest]:
    fake = world.fake
    fake.guilds[world.guild].roles[world.guild].permissions = VIEW_CHANNEL  # @everyone: look only
    async with running(world, config(tmp_path, world)) as bot:
        await subscribe(bot, ALICE, world.results, "live pin")
        await subscribe(bot, ALICE, world.union, "thread")
        await replay(bot)
        listed = await bot.slash(ALICE, "chart", opts(count="bessemer-2021"), channel=world.news)
        assert answered(listed)
    return [r for r in fake.requests if r.status == 403]


@pytest.mark.parametrize("world", [SHIPPED], indirect=True, ids=["shipped-invite"])
async def test_the_shipped_invite_grants_all_the_bot_does(tmp_path: Path, world: World) -> None:
    assert await _everything_the_bot_does(tmp_path, world) == []
    fake = world.fake
    threads = [c for c in fake.channels.values() if c.parent_id == world.union]
    assert len(threads) == 1
    assert bot_posts(fake, threads[0].id)
    assert [visible(p.content) for p in bot_posts(fake, world.admin)] == []  # nothing refused


@pytest.mark.parametrize(
    ("world", "refused_at"),
    [
        (without(Permission.PIN_MESSAGES), "/pins/"),
        (without(Permission.EMBED_LINKS), "/messages"),  # an update is an embed
        (without(Permission.CREATE_PUBLIC_THREADS), "/threads"),
    ],
    indirect=["world"],
    ids=["no-pins", "no-embeds", "no-threads"],
)
async def test_an_invite_short_of_a_right_the_bot_uses_is_caught(
    tmp_path: Path, world: World, refused_at: str
) -> None:
    refused = await _everything_the_bot_does(tmp_path, world)
    assert refused
    assert all(refused_at in r.path for r in refused)


async def test_the_fake_makes_the_bots_role_from_the_link() -> None:
    async with FakeDiscord(invite=invite_url(APP_ID)) as fake:
        guild = fake.add_guild("g")
        role = next(r for r in fake.guilds[guild].roles.values() if r.bot_id is not None)
        assert role.permissions == permissions()
    with pytest.raises(ValueError, match="do not add a bot"):
        FakeDiscord(invite="https://discord.com/oauth2/authorize?client_id=1&scope=identify")


async def test_the_bot_asks_only_for_intents_an_app_has_without_portal_switches(
    tmp_path: Path, world: World
) -> None:
    """The fake is an application with no privileged intent switched on in the Developer
    Portal (members, presences, message content: it closes 4014 on any); the bot connects and
    asks for exactly ``intents()``, which needs none of them."""
    assert world.fake.privileged_intents == 0
    async with running(world, config(tmp_path, world)):
        pass
    (identify,) = [p["d"] for p in world.fake.gateway.received if p["op"] == 2]
    assert identify["intents"] == intents().value
    assert not intents().value & PRIVILEGED_INTENTS
    assert world.fake.gateway.close_codes == []
