"""``tallybot doctor --config FILE`` against the fakes, through the real client libraries: a
configuration file pointing each platform's client at its fake, the store's subscriptions, and
one line per problem with its fix, nothing posted; exit 0 when nothing is wrong."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.doctor import intent_problems
from adapters.discord.lib import discord
from adapters.slack.settings import SCOPES as SLACK_SCOPES
from bot.domain.subscription import ChannelRef, Platform, Wants
from bot.ingest.live import reconcile
from bot.ops.doctor import doctor
from bot.runtime.preflight import load_checked
from bot.store import Database
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.adapters.rigs.base import count_table
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.manifest import load_manifest
from tests.fakes.telegram_fake import FakeTelegram

pytestmark = pytest.mark.timeout(60)

COUNT = "bessemer-2021"
TELEGRAM = Platform("telegram")
SLACK = Platform("slack")
DISCORD = Platform("discord")
DISCORD_TOKEN = "discord-test-token"


def write_config(tmp_path: Path, tables: Mapping[str, Any]) -> Path:
    """A TOML file (tables of strings and lists, as JSON values are TOML values here)."""
    lines = [f'[store]\nurl = "sqlite+aiosqlite:///{tmp_path / "tallybot.sqlite3"}"\n']
    for name, table in tables.items():
        lines.append(f"[{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
        lines.append("")
    count = count_table()
    lines.append("[[counts]]")
    for key in ("id", "title", "rule", "tie_holder", "eligible", "received"):
        lines.append(f"{key} = {json.dumps(count[key])}")
    lines.append("source = { kind = 'manual' }")
    for choice in count["choices"]:
        lines += ["[[counts.choices]]", f"id = {json.dumps(choice['id'])}"]
        lines.append(f"label = {json.dumps(choice['label'])}")
    path = tmp_path / "tallybot.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def subscribe(path: Path, env: Mapping[str, str], *subs: tuple[ChannelRef, Wants]) -> None:
    cfg = load_checked(path, env)
    async with Database(cfg.store_url) as db:
        await reconcile(db, cfg.counts)
        async with db.begin() as conn:
            for channel, wants in subs:
                at = FakeClock().now()
                await sub_rows.subscribe(conn, channel, COUNT, wants, by="test", at=at)


def telegram_ref(chat_id: int) -> ChannelRef:
    return ChannelRef(TELEGRAM, str(chat_id), str(chat_id))


@pytest.mark.xdist_group("telegram")  # aiogram at run time: see TELEGRAM_GROUP in tests/conftest.py
async def test_telegram_every_chat_the_bot_cannot_post_or_pin_in(tmp_path: Path) -> None:
    async with FakeTelegram() as fake:
        fine = fake.add_group("Results", bot="administrator", bot_rights=["can_pin_messages"])
        restricted = fake.add_group("Union hall")
        kicked = fake.add_group("Old hall")
        unpinnable = fake.add_group("Lobby")
        fake.set_bot_status(restricted, "restricted")
        fake.set_bot_status(kicked, "kicked")
        env = {"TELEGRAM_BOT_TOKEN": fake.token}
        path = write_config(tmp_path, {"telegram": {"api_base": fake.base_url}})
        pinned = Wants(pin=True)
        await subscribe(
            path, env,
            (telegram_ref(fine.id), pinned),
            (telegram_ref(restricted.id), Wants()),
            (telegram_ref(kicked.id), Wants()),
            (telegram_ref(unpinnable.id), pinned),
        )  # fmt: skip
        status, lines = await doctor(path, env)
        sent = [r for r in fake.requests if r.method.startswith(("send", "pin"))]
    assert status == 1
    assert sent == []
    by_chat = {
        c.id: [line for line in lines if f":{c.id}/" in line]
        for c in (fine, restricted, kicked, unpinnable)
    }
    assert by_chat[fine.id] == []
    assert any("may not send messages" in line for line in by_chat[restricted.id]), lines
    assert any("kicked" in line.lower() or "cannot reach" in line for line in by_chat[kicked.id]), (
        lines
    )
    assert [("pin" in line, "fix:" in line) for line in by_chat[unpinnable.id]] == [(True, True)]


@pytest.mark.xdist_group("telegram")  # aiogram at run time: see TELEGRAM_GROUP in tests/conftest.py
async def test_telegram_nothing_wrong_exits_0(tmp_path: Path) -> None:
    async with FakeTelegram() as fake:
        group = fake.add_group("Results")
        env = {"TELEGRAM_BOT_TOKEN": fake.token}
        path = write_config(tmp_path, {"telegram": {"api_base": fake.base_url}})
        await subscribe(path, env, (telegram_ref(group.id), Wants()))
        status, lines = await doctor(path, env)
        wrong_token = {"TELEGRAM_BOT_TOKEN": "123456:ABCdefGHIjklMNOpqrSTUvwx"}
        wrong, wrong_lines = await doctor(path, wrong_token)
    assert status == 0
    assert "no problem found" in lines[-1]
    assert wrong == 1
    assert any("refused the bot's token" in line for line in wrong_lines), wrong_lines


def slack_env(fake: FakeSlack) -> dict[str, str]:
    return {"SLACK_BOT_TOKEN": fake.bot_token, "SLACK_APP_TOKEN": fake.app_token}


async def test_slack_scopes_the_app_lacks_and_channels_the_bot_is_not_in(tmp_path: Path) -> None:
    shipped = load_manifest()
    without_pins = dataclasses.replace(shipped, scopes=shipped.scopes - {"pins:write"})
    async with FakeSlack(manifest=without_pins) as fake:
        member, outside = fake.add_channel("results"), fake.add_channel("union")
        fake.kick_bot(outside)
        env = slack_env(fake)
        path = write_config(tmp_path, {"slack": {"api_base": fake.api_url}})
        other_team = ChannelRef(SLACK, "T0OTHER", "C0OTHER")
        await subscribe(
            path, env,
            (ChannelRef(SLACK, fake.team_id, member), Wants()),
            (ChannelRef(SLACK, fake.team_id, outside), Wants()),
            (other_team, Wants()),
        )  # fmt: skip
        status, lines = await doctor(path, env)
        posted = [c for c in fake.calls if c.method.startswith(("chat.", "files.", "pins."))]
    assert status == 1
    assert posted == []
    assert [line for line in lines if member in line] == []
    assert any("lacks the scope pins:write" in line for line in lines), lines
    assert any(outside in line and "not a member" in line for line in lines), lines
    assert any("T0OTHER" in line and "serves workspace" in line for line in lines), lines
    assert all("fix:" in line for line in lines if "slack" in line), lines


async def test_slack_as_shipped_and_invited_exits_0(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        channel = fake.add_channel("results")
        env = slack_env(fake)
        path = write_config(tmp_path, {"slack": {"api_base": fake.api_url}})
        await subscribe(path, env, (ChannelRef(SLACK, fake.team_id, channel), Wants(pin=True)))
        status, lines = await doctor(path, env)
    assert status == 0, lines


async def test_discord_each_permission_a_channel_lacks_with_its_fix(tmp_path: Path) -> None:
    async with FakeDiscord(token=DISCORD_TOKEN) as fake:
        guild = fake.add_guild("Bessemer Watch")
        names = ("results", "union", "news", "admin", "gone")
        results, union, news, admin, gone = (fake.add_channel(guild, n) for n in names)
        quiet_role = fake.add_role(guild, "count-admins")
        loud_role = fake.add_role(guild, "watchers", mentionable=True)
        fake.revoke_send(union)
        fake.revoke_attach_files(news)
        env = {"DISCORD_TOKEN": DISCORD_TOKEN}
        tables = {"discord": {"api_base": fake.base_url, "gateway_url": fake.gateway_url}}
        path = write_config(tmp_path, tables)

        def ref(channel: int) -> ChannelRef:
            return ChannelRef(DISCORD, str(guild), str(channel))

        await subscribe(
            path, env,
            (ref(results), Wants(mention=str(loud_role))),
            (ref(union), Wants()),
            (ref(news), Wants()),
            (ref(admin), Wants(pin=True, mention=str(quiet_role))),
            (ref(gone), Wants()),
        )  # fmt: skip
        fake.delete_channel(gone)
        status, lines = await doctor(path, env)
        writes = [r for r in fake.requests if r.method != "GET"]
    assert status == 1
    assert writes == []

    def about(channel: int) -> list[str]:
        return [line for line in lines if line.startswith(f"{ref(channel)}:")]

    assert about(results) == []
    assert about(union) == [
        f"{ref(union)}: the bot lacks Send Messages; fix: give the bot Send Messages in #union"
    ]
    assert about(news) == [
        f"{ref(news)}: the bot lacks Attach Files; fix: give the bot Attach Files in #news"
    ]
    assert len(about(admin)) == 2
    assert "Pin Messages" in about(admin)[0]
    assert "may not ping @count-admins" in about(admin)[1]
    assert [("no longer exists" in line) for line in about(gone)] == [True]


async def test_discord_a_refused_token(tmp_path: Path) -> None:
    async with FakeDiscord(token=DISCORD_TOKEN) as fake:
        tables = {"discord": {"api_base": fake.base_url, "gateway_url": fake.gateway_url}}
        path = write_config(tmp_path, tables)
        status, lines = await doctor(path, {"DISCORD_TOKEN": "not-the-bot-token-at-all"})
    assert status == 1
    assert lines[0].startswith("discord: Discord refused DISCORD_TOKEN; fix:"), lines


def test_slack_doctor_wants_the_scopes_of_the_shipped_manifest() -> None:
    assert set(SLACK_SCOPES) == load_manifest().scopes


def test_discord_a_privileged_intent_asked_for_but_off() -> None:
    off = discord.ApplicationFlags._from_value(0)
    content = discord.Intents.none()
    content.guilds = content.message_content = True
    assert intent_problems(off, discord.Intents.none()) == []
    assert intent_problems(off) == []  # tallybot asks for no privileged intent
    (problem,) = intent_problems(off, content)
    assert "Message Content" in problem.line()
    on = discord.ApplicationFlags._from_value(1 << 19)  # GATEWAY_MESSAGE_CONTENT_LIMITED
    assert intent_problems(on, content) == []
