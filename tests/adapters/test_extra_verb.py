"""A verb added to the core's table (a spec and a handler) reaches every platform with no change
to any adapter: Discord registers it (checked by the fake as Discord checks commands: the
built-in verbs fill ``/count``'s 25 subcommands, so it is ``/echo``, a command of its own) and
runs it; Slack's help lists it and ``/count`` runs it; Telegram's command
menu lists it and both ``/echo`` and ``/count echo`` run it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.settings import DiscordSettings
from adapters.slack.adapter import SlackAdapter
from adapters.telegram.settings import BOT_TOKEN, TelegramSettings
from bot.commands.args import TextArg
from bot.commands.builtin import VERBS
from bot.commands.handler import Commands
from bot.commands.request import Reply
from bot.commands.throttle import PUBLIC_PER_CHANNEL
from bot.commands.verbs import Call, VerbSpec
from bot.ingest.pipeline import Pipeline
from bot.platform import Context
from bot.settings.secrets import Secret
from bot.store import Database
from bot.testing.clock import FakeClock
from tests.adapters.telegram.conftest import shown
from tests.adapters.test_discord import answer, answered
from tests.adapters.test_slack import config as slack_config
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.markdown import visible
from tests.fakes.slack_fake import FakeSlack, ResponseUrlPost
from tests.fakes.slack_fake.markup import visible as slack_visible
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import loopback_session

ECHO = VerbSpec(
    "echo", "Say the words back to the channel", (TextArg("words", "What to say"),), public=True
)


async def echo(call: Call) -> Reply:
    return Reply(f"echo: {call.command.text}", ephemeral=False)


def core(tmp_path: Path, clock: FakeClock) -> Commands:
    """The core with one more verb; the verb touches no store (never opened)."""
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'unused.sqlite3'}")
    verbs = VERBS.extended([(ECHO, echo)])
    return Commands(db, Pipeline(db, clock), clock, verbs=verbs)


def context(commands: Commands, **kw: Any) -> Context:
    return Context(
        handle=commands.handle,
        clock=commands.clock,
        throttle=commands.throttle,
        verbs=commands.verbs,
        **kw,
    )


async def test_discord_registers_and_runs_the_extra_verb(tmp_path: Path) -> None:
    clock = FakeClock()
    commands = core(tmp_path, clock)
    async with FakeDiscord(token="t") as fake:
        guild = fake.add_guild("Bessemer Watch")
        channel = fake.add_channel(guild, "results")
        fake.add_member(guild, 111, "alice")
        settings = DiscordSettings(
            api_base=fake.base_url, gateway_url=fake.gateway_url, guilds=(guild,)
        )
        secrets = {"DISCORD_TOKEN": Secret("DISCORD_TOKEN", "t")}
        adapter = DiscordAdapter(
            settings,
            context(commands, place="server", secrets=secrets),
            client_options={"guild_ready_timeout": 0.05},
            ready_timeout=10,
        )
        async with adapter:
            count, echo = fake.registered_commands[guild]
            ix = await fake.inject_slash_command(
                guild, channel, 111, "echo", [{"name": "words", "value": "hello  there"}]
            )
            await fake.wait_for(lambda: answered(ix))
    subs = {o["name"]: o for o in count["options"]}
    assert list(subs) == [s.name for s in VERBS]
    assert len(subs) == 25  # /count is full
    assert (echo["name"], echo["description"]) == ("echo", "Say the words back to the channel")
    assert echo.get("dm_permission") is False  # in servers only, as /count
    (words,) = echo["options"]
    assert (words["name"], words["type"], words["required"]) == ("words", 3, True)
    assert ix.callbacks[0].flags == 0  # deferred publicly: the table says it may be public
    shown_ = answer(ix)
    assert visible(shown_.content) == "echo: hello there"
    assert not shown_.ephemeral


async def test_slack_helps_with_and_runs_the_extra_verb(tmp_path: Path) -> None:
    commands = core(tmp_path, FakeClock())
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        settings = slack_config(tmp_path, fake).settings("slack")
        secrets = {
            "SLACK_BOT_TOKEN": Secret("SLACK_BOT_TOKEN", fake.bot_token),
            "SLACK_APP_TOKEN": Secret("SLACK_APP_TOKEN", fake.app_token),
        }
        async with SlackAdapter(settings, context(commands, secrets=secrets)):
            await fake.wait_for(lambda: len(fake.live_socket_connections) == 1)
            posts = []
            for text in ("help", "echo hi there"):
                delivery = await fake.send_slash_command(
                    command="/count", text=text, user_id=user, channel_id=channel
                )
                url = delivery.response_url

                def answered_at(url: str | None = url) -> list[ResponseUrlPost]:
                    return [p for p in fake.response_url_posts if p.url == url]

                await fake.wait_for(lambda: bool(answered_at()))
                posts.extend(answered_at())
    helped, echoed = (p.body for p in posts)
    assert helped["response_type"] == "ephemeral"
    assert slack_visible(helped["text"]).splitlines()[-1] == "  echo <words>"
    assert (echoed["response_type"], echoed["text"]) == ("in_channel", "echo: hi there")


@pytest.mark.xdist_group("telegram")  # aiogram at run time: see TELEGRAM_GROUP in tests/conftest.py
async def test_telegram_menu_lists_and_runs_the_extra_verb(tmp_path: Path) -> None:
    from adapters.telegram.adapter import TelegramAdapter

    clock = FakeClock()
    commands = core(tmp_path, clock)

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    async with FakeTelegram(clock=clock.monotonic) as fake:
        alice = fake.add_user("Alice", "alice")
        group = fake.add_group("Union hall")
        fake.add_member(group, alice)
        settings = TelegramSettings(api_base=fake.base_url)
        ctx = context(commands, place="chat", secrets={BOT_TOKEN: Secret(BOT_TOKEN, fake.token)})
        adapter = TelegramAdapter(settings, ctx, session=loopback_session(), sleep=sleep)
        async with adapter:
            menu = fake.commands()
            fake.command(group, alice, "/echo as a command")
            await fake.wait_for(lambda: len(answers(fake, group)) == 1)
            # a group shows one public answer per window (adapters.telegram.private): the next
            # window's, for the second command
            clock.advance(PUBLIC_PER_CHANNEL.seconds)
            fake.command(group, alice, "/count echo through count")
            await fake.wait_for(lambda: len(answers(fake, group)) == 2)
            said = [shown(m) for m in answers(fake, group)]
    members = [s.name for s in VERBS if s.admin is None]
    assert [c["command"] for c in menu] == ["count", *members, "echo"]
    assert menu[-1]["description"] == "Say the words back to the channel"
    assert said == ["echo: as a command", "echo: through count"]


def answers(fake: FakeTelegram, chat: Any) -> list[Any]:
    return [m for m in fake.visible(chat) if m.source == "sendMessage"]


def test_extending_leaves_the_built_in_table_alone() -> None:
    assert "echo" not in VERBS


def test_the_slack_manifest_hints_only_verbs_of_the_table() -> None:
    """The manifest is pasted into Slack by hand, so it is text; what it hints must exist."""
    import re

    from bot.commands.builtin import VERBS

    manifest = (Path(__file__).parents[2] / "config" / "slack-manifest.yml").read_text()
    (hint,) = re.findall(r'usage_hint: "([^"]+)"', manifest)
    hinted = [part.split()[0] for part in hint.split(" | ")]
    assert hinted
    assert [v for v in hinted if v not in VERBS] == []
