"""The fake Discord's shards: guilds on a chosen shard, events routed by shard, and Discord's
identify limit (``max_concurrency`` sessions per 5 s, one per bucket ``shard %
max_concurrency``; beyond it, Invalid Session)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.discord_fake import FakeDiscord

TOKEN = "fake-token"
ALICE = 111_111_111_111_111_111


@pytest.fixture
async def ticks() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def fake(ticks: FakeClock) -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(
        token=TOKEN, max_concurrency=2, recommended_shards=4, identify_clock=ticks.monotonic
    ) as fake:
        yield fake


async def identify(session: aiohttp.ClientSession, fake: FakeDiscord, shard: int) -> Any:
    """Connect and IDENTIFY as ``shard`` of 4: the first frame after HELLO."""
    ws = await session.ws_connect(fake.gateway_url + "?v=10&encoding=json")
    await ws.receive_json()  # HELLO
    payload = {"token": TOKEN, "intents": 1, "shard": [shard, 4], "properties": {}}
    await ws.send_json({"op": 2, "d": payload})
    first = await ws.receive_json()
    await ws.close()
    return first


async def test_guilds_on_a_given_shard(fake: FakeDiscord) -> None:
    for shard in (0, 1, 2, 3, 3, 1):
        guild = fake.add_guild(f"g{shard}", shard=(shard, 4))
        assert (guild >> 22) % 4 == shard
    assert len(fake.guilds) == 6
    later = fake.add_guild("plain")
    assert later > max(g for g in fake.guilds if g != later)


async def test_gateway_bot_reports_shards_and_max_concurrency(fake: FakeDiscord) -> None:
    headers = {"Authorization": f"Bot {TOKEN}"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.get(f"{fake.base_url}/gateway/bot") as resp,
    ):
        body = await resp.json()
    assert body["shards"] == 4
    assert body["session_start_limit"]["max_concurrency"] == 2


async def test_identify_beyond_max_concurrency_is_an_invalid_session(
    fake: FakeDiscord, ticks: FakeClock
) -> None:
    async with aiohttp.ClientSession() as session:
        # Buckets 0 and 1 (shard % 2): one session each per 5 s.
        assert (await identify(session, fake, 0))["t"] == "READY"
        assert (await identify(session, fake, 1))["t"] == "READY"
        refused = await identify(session, fake, 2)  # bucket 0 again, at once
        assert (refused["op"], refused["d"]) == (9, False)
        ticks.advance(4.9)
        assert (await identify(session, fake, 2))["op"] == 9
        ticks.advance(0.2)  # 5.1 s after bucket 0's session started
        assert (await identify(session, fake, 2))["t"] == "READY"
        assert (await identify(session, fake, 3))["t"] == "READY"  # bucket 1: 5.1 s too
    assert fake.gateway.identify_refused == 2
    assert fake.gateway.identify_count == 4


async def test_an_interaction_reaches_only_its_shard(fake: FakeDiscord, ticks: FakeClock) -> None:
    on_one = fake.add_guild("one", shard=(1, 4))
    channel = fake.add_channel(on_one, "results")
    fake.add_member(on_one, ALICE, "alice")
    async with aiohttp.ClientSession() as session:
        url = fake.gateway_url + "?v=10&encoding=json"
        async with session.ws_connect(url) as zero, session.ws_connect(url) as one:
            for ws, shard in ((zero, 0), (one, 1)):
                await ws.receive_json()
                d = {"token": TOKEN, "intents": 1, "shard": [shard, 4], "properties": {}}
                await ws.send_json({"op": 2, "d": d})
                assert (await ws.receive_json())["t"] == "READY"
            await one.receive_json()  # the GUILD_CREATE of its guild
            await fake.inject_slash_command(
                on_one, channel, ALICE, "count", [], allow_unregistered=True
            )
            event = await one.receive_json()
            assert (event["t"], event["d"]["guild_id"]) == ("INTERACTION_CREATE", str(on_one))
            assert fake.gateway.overlaps == 0
            ticks.advance(5)
            async with session.ws_connect(url) as again:  # shard 1 twice: recorded
                await again.receive_json()
                d = {"token": TOKEN, "intents": 1, "shard": [1, 4], "properties": {}}
                await again.send_json({"op": 2, "d": d})
                assert (await again.receive_json())["t"] == "READY"
            assert fake.gateway.overlaps == 1
    assert [p["t"] for p in fake.gateway.sent if p.get("t") == "INTERACTION_CREATE"] == [
        "INTERACTION_CREATE"
    ]


async def test_a_heartbeat_ack_comes_a_round_trip_later_when_one_is_set(fake: FakeDiscord) -> None:
    fake.gateway.ack_delay_s = 0.05
    url = fake.gateway_url + "?v=10&encoding=json"
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await ws.receive_json()  # HELLO
        await ws.send_json({"op": 1, "d": None})
        with pytest.raises(TimeoutError):
            await ws.receive_json(timeout=0.01)
        assert (await ws.receive_json(timeout=5))["op"] == 11
