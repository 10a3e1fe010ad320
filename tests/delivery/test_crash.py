"""Exactly once as users see it: kill -9 the bot in the middle of a fan-out, start it again.

The bot runs as a real subprocess (``tallybot run``) against the fake Discord and the fake Slack
served by this test process. One significant update is queued to many channels; once some of
them have it, the process is killed with SIGKILL and started again on the same store. Every
channel must end with the message exactly once: Discord deduplicates the retried send by its
nonce, and the Slack adapter finds its earlier post by the message metadata.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.clock import SystemClock
from bot.config import load
from bot.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.subscription import ChannelRef, Mode, Platform
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import bessemer, tally

CHANNELS = 60


def toml_value(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


async def start_bot(config: Path, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as sink:  # the child writes its logs to a file, never a full pipe
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", "--config", str(config),
            env=env, stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=sink,
        )  # fmt: skip


async def stop(proc: asyncio.subprocess.Process, sig: int) -> None:
    if proc.returncode is None:
        proc.send_signal(sig)
    await proc.wait()


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeDiscord, FakeSlack]]:
    # Slow enough that the fan-out takes a few seconds: there is time to kill it midway.
    async with (
        FakeDiscord(global_limit_per_s=20) as discord_fake,
        FakeSlack(post_per_channel_per_s=1.0, post_burst=1) as slack_fake,
    ):
        yield discord_fake, slack_fake


@pytest.mark.timeout(120)
async def test_kill_9_mid_fan_out_then_restart_delivers_each_message_once(
    fakes: tuple[FakeDiscord, FakeSlack], tmp_path: Path
) -> None:
    discord_fake, slack_fake = fakes
    guild = discord_fake.add_guild("Bessemer organisers")
    discord_channels = [discord_fake.add_channel(guild, f"count-{i}") for i in range(CHANNELS)]
    slack_channels = [slack_fake.add_channel(f"count-{i}") for i in range(CHANNELS)]
    store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    config = tmp_path / "tallybot.toml"
    config.write_text(
        "\n".join(
            [
                f"[store]\nurl = {toml_value(store)}",
                f"[discord]\napi_base = {toml_value(discord_fake.base_url)}",
                f"gateway_url = {toml_value(discord_fake.gateway_url)}",
                f"guilds = [{guild}]",
                f"[slack]\napi_base = {toml_value(slack_fake.api_url)}",
                "[[counts]]",
                'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
                'tie_holder = "no"\nreceived = 3215',
                'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
                'source = {kind = "manual"}',
            ]
        )
        + "\n"
    )
    load(config)  # the documented format
    # Queue one significant update to every channel before the bot starts.
    clock = SystemClock()
    async with Database(store) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, bessemer())
            refs = [ChannelRef(Platform.DISCORD, str(guild), str(c)) for c in discord_channels]
            refs += [ChannelRef(Platform.SLACK, slack_fake.team_id, c) for c in slack_channels]
            for ref in refs:
                await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", Mode.EVENTS, by="t", at=clock.now()
                )
        result = await Pipeline(db, clock).ingest(tally(84, 201))
        assert result.message is not None
        assert result.message.significant

    env = {
        **os.environ,
        "DISCORD_TOKEN": discord_fake.token,
        "SLACK_BOT_TOKEN": slack_fake.bot_token,
        "SLACK_APP_TOKEN": slack_fake.app_token,
        "SLACK_SIGNING_SECRET": slack_fake.signing_secret,
    }

    def on_discord() -> int:
        return sum(1 for ch in discord_channels if discord_fake.messages(ch))

    def on_slack() -> int:
        return sum(1 for ch in slack_channels if slack_fake.messages(ch))

    def delivered() -> int:
        return on_discord() + on_slack()

    log = tmp_path / "bot.log"
    first = await start_bot(config, env, log)
    try:
        await discord_fake.wait_for(lambda: on_discord() >= CHANNELS // 2, timeout=60)
    except TimeoutError:
        raise AssertionError(log.read_text()[-3000:]) from None
    finally:
        await stop(first, signal.SIGKILL)  # kill -9: no cleanup, deliveries left in flight
    killed_at = delivered()
    assert killed_at < 2 * CHANNELS, "the fan-out finished before the kill: slow the fakes"

    second = await start_bot(config, env, log)
    try:
        await discord_fake.wait_for(lambda: on_discord() == CHANNELS, timeout=60)
        await slack_fake.wait_for(lambda: on_slack() == CHANNELS, timeout=60)
    finally:
        await stop(second, signal.SIGTERM)
    errors = log.read_text()
    for ch in discord_channels:
        texts = [m.embeds[0]["title"] for m in discord_fake.messages(ch) if m.embeds]
        assert len(texts) == 1, (ch, texts, errors[-2000:])
    for ch in slack_channels:
        assert len(slack_fake.messages(ch)) == 1, (ch, errors[-2000:])
