"""Discord's gateway as Discord wants it kept (issue 28 part 5): a zombie connection (heartbeats
no longer acknowledged) is given up at its first missed ACK and RESUMEd; after a close 4007
(invalid seq) or 4009 (session timed out) a new session starts (IDENTIFY), not a RESUME that
Discord would refuse. The real discord.py against the fake, whose heartbeat interval is
shortened alike for the bot (``heartbeat_interval_s``) and the fake (HELLO's)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from adapters.discord.adapter import DiscordAdapter
from adapters.discord.gateway import HEARTBEAT_INTERVAL_S, heartbeat_timeout
from bot.delivery.pacing import Window
from bot.settings.secrets import Secret
from tests.adapters import test_discord
from tests.adapters.test_discord import TOKEN, World, config
from tests.helpers import bare_context

vt = test_discord.vt  # the fixtures, shared
world = test_discord.world
INTERVAL_S = 0.2


@asynccontextmanager
async def connected(
    tmp_path: Path, world: World, interval_s: float = HEARTBEAT_INTERVAL_S
) -> AsyncIterator[DiscordAdapter]:
    world.fake.gateway.heartbeat_interval_ms = int(interval_s * 1000)
    adapter = DiscordAdapter(
        config(tmp_path, world).settings("discord"),
        bare_context(secrets={"DISCORD_TOKEN": Secret("DISCORD_TOKEN", TOKEN)}),
        client_options={"guild_ready_timeout": 0.05},
        heartbeat_interval_s=interval_s,
        identify_window=Window(1, 0.05),  # a new session may start at once
    )
    async with adapter:
        yield adapter


def test_the_shipped_timeout_is_one_interval_and_a_little() -> None:
    # discord.py's default is 60 s: about a whole interval more than a missed ACK needs.
    assert HEARTBEAT_INTERVAL_S < heartbeat_timeout() <= HEARTBEAT_INTERVAL_S + 5 < 60


async def test_a_zombie_connection_is_resumed_at_its_first_missed_ack(
    tmp_path: Path, world: World
) -> None:
    gateway = world.fake.gateway
    async with connected(tmp_path, world, INTERVAL_S):
        before = gateway.resume_count  # 0, unless a slow machine missed an ACK already
        gateway.withhold_acks = True
        # discord.py's default would wait 60 s; one interval and a tenth is enough.
        await world.fake.wait_for(lambda: gateway.resume_count > before, timeout=20 * INTERVAL_S)
        gateway.withhold_acks = False
        assert gateway.acks_withheld <= 2  # the heartbeats sent on the zombie connection
        assert gateway.identify_count == 1  # the same session, resumed


@pytest.mark.parametrize("code", [4007, 4009])
async def test_after_4007_or_4009_a_new_session_starts_at_once(
    tmp_path: Path, world: World, code: int
) -> None:
    gateway = world.fake.gateway
    async with connected(tmp_path, world) as adapter:
        assert adapter.shards is not None
        client = adapter.shards.clients[0]
        ready_again = asyncio.ensure_future(client.wait_for("ready", timeout=5))
        await world.fake.disconnect_gateway(code)
        await ready_again
    after = gateway.received[[p["op"] for p in gateway.received].index(2) + 1 :]
    ops = [p["op"] for p in after if p["op"] != 1]  # heartbeats aside
    assert ops == [2]  # IDENTIFY, no RESUME first
    assert gateway.resume_count == 0
