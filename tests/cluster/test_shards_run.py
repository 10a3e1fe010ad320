"""Three real ``tallybot run`` processes on one PostgreSQL database run a bot of three Discord
shards as one: they divide the shards (one gateway session per shard), every slash command is
answered exactly once, a shard's holder killed with SIGKILL is replaced within the lease bound
and its guilds' commands are answered again; no IDENTIFY goes over Discord's limit (the fake
answers one beyond ``max_concurrency`` per 5 s with Invalid Session), and two sessions of a
shard are connected only while it is handed on (as the instances settle: the old session runs
until the new one is up, and each command is still carried out once).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bot.settings.loader import load
from tests.cluster.fleet import Fleet, Instance, start, stop_all
from tests.conftest import PG_URL, _require_postgres
from tests.delivery.crash_run import fresh_postgres, toml_value
from tests.fakes.discord_fake import FakeDiscord, FakeInteraction
from tests.fakes.slack_fake import FakeSlack

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # real processes
SHARDS = 3
LEASE_S = 3.0
"""``[cluster] shard_lease_seconds``: a round every second."""
ALICE = 111_111_111_111_111_111
TAKEOVER_BOUND_S = LEASE_S + LEASE_S / 3 + 5.0 / 0.9 + 5.0
"""Leases run out, the next round, a turn to identify (one per 5 s, spaced for 90%), and the
new session's READY with some slack for a loaded machine."""


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def pg() -> AsyncIterator[str]:
    await _require_postgres()
    async with fresh_postgres(PG_URL) as url:
        yield url


def write_config(path: Path, store_url: str, d: FakeDiscord, guilds: list[int]) -> None:
    lines = [
        f"[store]\nurl = {toml_value(store_url)}",
        f"[cluster]\nshard_lease_seconds = {LEASE_S}",
        "[server]\nport = 0",
        f"[discord]\napi_base = {toml_value(d.base_url)}",
        f"gateway_url = {toml_value(d.gateway_url)}",
        f"guilds = [{', '.join(map(str, guilds))}]",
        f"shard_count = {SHARDS}",
        "[[counts]]",
        'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'choices = [{id = "yes", label = "Yes"}, {id = "no", label = "No"}]',
        'source = {kind = "manual"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    load(path)  # the documented format


async def shards_of(http: aiohttp.ClientSession, instance: Instance) -> list[int]:
    body = await instance.healthz(http)
    held = body["instance"]
    assert isinstance(held, dict)
    return list(held["shards"])


async def holders(http: aiohttp.ClientSession, fleet: Fleet) -> dict[int, list[str]]:
    """Who says it runs each shard (read one instance after the other: a shard handed on
    between two reads shows twice, or not at all)."""
    found: dict[int, list[str]] = {}
    for instance in fleet.instances:
        if instance.alive():
            for shard in await shards_of(http, instance):
                found.setdefault(shard, []).append(instance.name)
    return found


async def ready(http: aiohttp.ClientSession, instance: Instance) -> bool:
    with contextlib.suppress(aiohttp.ClientError):
        async with http.get(f"{instance.url}/readyz") as resp:
            return resp.status == 200
    return False


async def settled(
    http: aiohttp.ClientSession, fleet: Fleet, d: FakeDiscord, guilds: list[int]
) -> dict[int, str]:
    """Poll (0.1 s) until every shard is held by one live instance whose sessions are ready,
    the instances share them (as many holders as instances, up to the shards), and each guild's
    events reach exactly one session."""
    while True:
        found = await holders(http, fleet)
        up = [await ready(http, i) for i in fleet.instances if i.alive()]
        once = all(len(names) == 1 for names in found.values())
        spread = len({names[0] for names in found.values()}) == min(len(up), SHARDS)
        if (
            len(found) == SHARDS
            and once
            and spread
            and all(up)
            and all(d.gateway.live_sessions(g) == 1 for g in guilds)
        ):
            return {shard: names[0] for shard, names in found.items()}
        await asyncio.sleep(0.1)


async def ask(d: FakeDiscord, guild: int, channel: int) -> FakeInteraction:
    """``/count list`` in ``guild``, answered (one session got it: one answer)."""
    assert d.gateway.live_sessions(guild) == 1
    ix = await d.inject_slash_command(guild, channel, ALICE, "count", [], subcommand="list")
    response = await ix.wait_response(timeout=10)
    assert response.status < 300
    return ix


@pytest.mark.timeout(180)
async def test_three_instances_divide_the_shards_and_take_over_a_killed_ones(
    pg: str, tmp_path: Path
) -> None:
    d = FakeDiscord(recommended_shards=SHARDS, max_concurrency=1, identify_clock=time.monotonic)
    async with d, FakeSlack() as s:  # not configured: the fleet's helpers expect one
        guilds = [d.add_guild(f"shard {n}", shard=(n, SHARDS)) for n in range(SHARDS)]
        channels = [d.add_channel(g, "results") for g in guilds]
        for g in guilds:
            d.add_member(g, ALICE, "alice")
        config = tmp_path / "tallybot.toml"
        write_config(config, pg, d, guilds)
        fleet = Fleet(d, s, pg, guilds[0], [], [])
        asked: list[FakeInteraction] = []
        try:
            await start(fleet, config, tmp_path, 3, limit=90)
            async with aiohttp.ClientSession() as http:
                async with asyncio.timeout(90):
                    before = await settled(http, fleet, d, guilds)
                assert sorted(set(before.values())) == ["i0", "i1", "i2"]  # one shard each
                for guild, channel in zip(guilds, channels, strict=True):
                    asked.append(await ask(d, guild, channel))

                victim_name = before[1]
                victim = next(i for i in fleet.instances if i.name == victim_name)
                killed = time.monotonic()
                await fleet.kill(victim)
                async with asyncio.timeout(60):
                    after = await settled(http, fleet, d, guilds)
                took = time.monotonic() - killed
                print(f"\nshard takeover after SIGKILL: {took:.2f} s (bound {TAKEOVER_BOUND_S} s)")
                assert after[1] != victim_name
                assert {s: n for s, n in after.items() if s != 1} == {
                    s: n for s, n in before.items() if s != 1
                }
                assert took <= TAKEOVER_BOUND_S
                for guild, channel in zip(guilds, channels, strict=True):
                    asked.append(await ask(d, guild, channel))
        finally:
            await stop_all(fleet)
        logs = "".join(i.log.read_text() for i in fleet.instances)
    assert all(len(ix.callbacks) == 1 for ix in asked), "a command answered twice"
    assert "already been acknowledged" not in logs
    assert d.gateway.identify_refused == 0  # the instances kept to max_concurrency together
    # two sessions of one shard only while it was handed on, until the new one was up
    assert d.gateway.overlaps <= logs.count('handed on"')
