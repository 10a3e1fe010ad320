"""What was acknowledged is carried out: SIGTERM right after 1,000 acknowledged commands.

The bot runs as a real subprocess (``tallybot run``, as in ``crash_run``) against the fake
Discord and the fake Slack served by this test process. 500 members each subscribe a Discord
channel and 500 a Slack channel, as fast as the bot acknowledges them; as soon as the last one
is acknowledged (Discord's interaction answered 200, Slack's envelope acked) the bot gets
SIGTERM. When it has exited, every command was taken (deferred on Discord, acked without an
answer on Slack: none answered busy, ``bot.commands.inflight``), answered and is in the store,
on SQLite as on PostgreSQL.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.commands.inflight import BUSY
from bot.store import Database
from bot.store.schema import subscriptions
from tests.adapters.test_discord import answer, answered
from tests.conftest import PG_URL, _require_postgres
from tests.delivery.crash_run import fakes, fresh_postgres, start_bot, write_config
from tests.fakes.discord_fake import FakeInteraction
from tests.fakes.slack_fake.records import SocketDelivery

pytestmark = pytest.mark.slow  # a real process

CHANNELS = 500
"""Per platform: one member subscribes each channel."""
SCALE = 40
WAVE = 50
"""Commands sent at once on each platform (one wave acknowledged before the next is sent: 500
at once would take the fake's gateway and the bot longer than Discord's 3 s to see)."""
MANAGE_CHANNELS = 1 << 4
MEMBER0 = 777_000_000_000_000_000
COUNT = [{"name": "count", "type": 3, "value": "bessemer-2021"}]


def busy(delivery: SocketDelivery) -> bool:
    """Acked with the busy answer: not taken."""
    return (delivery.ack_payload or {}).get("text") == BUSY.text


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The bot's store: a SQLite file, or a fresh PostgreSQL database (dropped afterwards)."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
        return
    await _require_postgres()
    async with fresh_postgres(PG_URL) as url:
        yield url


@pytest.mark.timeout(120)
async def test_sigterm_after_1000_acknowledged_commands_stores_and_answers_every_one(
    tmp_path: Path, store_url: str
) -> None:
    d, s = fakes(SCALE)
    async with d, s:
        guild = d.add_guild("Bessemer organisers")
        d_chans = [d.add_channel(guild, f"count-{i}") for i in range(CHANNELS)]
        s_chans = [s.add_channel(f"count-{i}") for i in range(CHANNELS)]
        for i in range(CHANNELS):
            d.add_member(guild, MEMBER0 + i, f"member-{i}", permissions=MANAGE_CHANNELS)
        s_users = [s.add_user(f"member{i}") for i in range(CHANNELS)]
        config = tmp_path / "tallybot.toml"
        write_config(config, store_url, guild, d, s, SCALE)
        with config.open("a") as toml:  # the last table is the count's: anyone may follow it
            toml.write("public = true\n")
        env = {
            **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
            "DISCORD_TOKEN": d.token,
            "SLACK_BOT_TOKEN": s.bot_token,
            "SLACK_APP_TOKEN": s.app_token,
            "SLACK_SIGNING_SECRET": s.signing_secret,
        }
        log = tmp_path / "bot.log"
        bot = await start_bot(config, env, log)
        try:
            try:  # up: /count synced after the gateway is ready; Slack's socket connected
                await d.wait_for(lambda: bool(d.registered_commands.get(guild)), timeout=60)
                await s.wait_for(lambda: bool(s.live_socket_connections), timeout=30)
            except TimeoutError:
                raise AssertionError(log.read_text()[-3000:]) from None
            asked: list[FakeInteraction] = []
            said: list[SocketDelivery] = []
            for start in range(0, CHANNELS, WAVE):  # as fast as the bot acknowledges them
                wave = range(start, min(CHANNELS, start + WAVE))
                got = await asyncio.gather(
                    *(
                        d.inject_slash_command(
                            guild, d_chans[i], MEMBER0 + i, "count", COUNT, subcommand="subscribe"
                        )
                        for i in wave
                    ),
                    *(
                        s.send_slash_command(
                            command="/count",
                            text="subscribe bessemer-2021",
                            user_id=s_users[i],
                            channel_id=s_chans[i],
                        )
                        for i in wave
                    ),
                )
                asked += [g for g in got if isinstance(g, FakeInteraction)]
                said += [g for g in got if isinstance(g, SocketDelivery)]
                await d.wait_for(lambda: all(ix.callbacks for ix in asked), timeout=30)  # noqa: B023
                await asyncio.gather(*(x.wait_ack(timeout=30) for x in said if not x.acked))
            seen = {p.url for p in s.response_url_posts if p.status == 200}
            open_d = sum(1 for ix in asked if not answered(ix))
            open_s = sum(1 for x in said if x.response_url not in seen and not busy(x))
            bot.send_signal(signal.SIGTERM)  # the moment the last one is acknowledged
            signalled = time.monotonic()
            await bot.wait()
            took = time.monotonic() - signalled
        finally:
            if bot.returncode is None:
                bot.kill()
                await bot.wait()

    assert all(c.status == 200 for ix in asked for c in ix.callbacks)
    assert all(delivery.acked for delivery in said)
    async with Database(store_url) as db, db.connect() as conn:
        stored = await conn.scalar(select(func.count()).select_from(subscriptions))
    taken_d = [ix for ix in asked if ix.callbacks[0].type == 5]  # deferred: to be carried out
    busy_d = [ix for ix in asked if ix.callbacks[0].type == 4]  # answered at once
    busy_s = [x for x in said if busy(x)]
    taken_s = [x for x in said if x not in busy_s]
    shown = {p.url for p in s.response_url_posts if p.status == 200}
    print(
        f"\n{store_url.split('+')[0]}: SIGTERM after 2 x {CHANNELS} acknowledged ({open_d} on "
        f"Discord and {open_s} on Slack taken, not answered yet): {len(taken_d)} + "
        f"{len(taken_s)} taken, {stored} stored; {len(busy_d)} + {len(busy_s)} answered busy; "
        f"stopped in {took:.2f} s"
    )
    assert [answer(ix).content for ix in busy_d] == [BUSY.text] * len(busy_d)
    assert (len(busy_d), len(busy_s)) == (0, 0)  # every one taken
    assert (len(taken_d), len(taken_s)) == (CHANNELS, CHANNELS)
    assert all(answered(ix) for ix in taken_d), log.read_text()[-3000:]
    assert all(x.response_url in shown for x in taken_s), log.read_text()[-3000:]
    assert stored == 2 * CHANNELS, log.read_text()[-3000:]
    assert bot.returncode == 0
