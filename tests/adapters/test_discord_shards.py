"""Discord shards in the adapter, with the real discord.py against the fake: one gateway session
per shard this instance runs, each identifying as ``[N, COUNT]``; on SQLite one instance runs
them all; on PostgreSQL two instances (here two apps in one process) divide them, every slash
command is carried out by one of them, and a shard handed on (over the share, or leaving) keeps
its session until the other's is up, a command in between carried out once. Rounds are stepped by
hand (the leases last an hour), so no test waits on the real clock."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.adapter import DiscordAdapter
from bot.delivery.pacing import Window
from bot.domain.subscription import Platform
from bot.runtime import plugins
from bot.runtime.app import App
from bot.settings.loader import Config
from bot.settings.loader import parse as parse_config
from bot.settings.secrets import Secret
from tests.adapters.test_discord import ALICE, TOKEN, VirtualTime, count_table
from tests.conftest import PG_URL, _pg_execute, _require_postgres
from tests.fakes.discord_fake import FakeDiscord, FakeInteraction

SHARDS = 2


IDENTIFY = Window(1, 0.2)
"""Discord's identify window, shortened alike for the bot and for the fake (which counts it on
a clock of its own, here 25 times as fast as the real one)."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    start = time.monotonic()
    async with FakeDiscord(
        token=TOKEN,
        max_concurrency=SHARDS,
        recommended_shards=SHARDS,
        identify_clock=lambda: (time.monotonic() - start) * 5.0 / IDENTIFY.seconds,
    ) as f:
        yield f


def setup(fake: FakeDiscord) -> list[tuple[int, int]]:
    """A guild on each shard, with a channel and a member: ``(guild, channel)`` each."""
    found = []
    for shard in range(SHARDS):
        guild = fake.add_guild(f"shard {shard}", shard=(shard, SHARDS))
        fake.add_member(guild, ALICE, "alice")
        found.append((guild, fake.add_channel(guild, "results")))
    return found


def config(tmp_path: Path, fake: FakeDiscord, guilds: list[int], store: str, **more: Any) -> Config:
    return parse_config(
        {
            "store": {"url": store},
            "cluster": {"shard_lease_seconds": 3600},
            "discord": {
                "api_base": fake.base_url,
                "gateway_url": fake.gateway_url,
                "guilds": guilds,
                "shard_count": "auto",
                **more,
            },
            "counts": [count_table()],
        },
        tmp_path / "tallybot.toml",
    )


@asynccontextmanager
async def running(
    fake: FakeDiscord,
    cfg: Config,
    vt: VirtualTime,
    schema: str | None = None,
    identify: Window = IDENTIFY,
) -> AsyncIterator[tuple[App, DiscordAdapter]]:
    made: list[DiscordAdapter] = []

    def factory(commands: Any) -> DiscordAdapter:
        secrets = {"DISCORD_TOKEN": Secret("DISCORD_TOKEN", TOKEN)}
        made.append(
            DiscordAdapter(
                cfg.settings("discord"),
                plugins.context(cfg, Platform("discord"), commands, secrets),
                client_options={"guild_ready_timeout": 0.05},
                ready_timeout=10,
                identify_window=identify,
            )
        )
        return made[-1]

    app = App(cfg, {Platform("discord"): factory}, clock=vt.bot, sleep=vt.sleep, poll=False,
              schema=schema)  # fmt: skip
    async with app:
        yield app, made[0]


async def ask(fake: FakeDiscord, guild: int, channel: int) -> FakeInteraction:
    assert fake.gateway.live_sessions(guild) == 1  # one session gets it: one answer
    ix = await fake.inject_slash_command(guild, channel, ALICE, "count", [], subcommand="list")
    response = await ix.wait_response()
    assert response.status < 300
    return ix


async def test_one_instance_on_sqlite_runs_every_shard(fake: FakeDiscord, tmp_path: Path) -> None:
    places = setup(fake)
    store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    cfg = config(tmp_path, fake, [g for g, _ in places], store)
    async with running(fake, cfg, VirtualTime()) as (app, adapter):
        assert app.instance.shards == {0, 1}
        assert (await adapter.health()).connected
        for guild, channel in places:
            ix = await ask(fake, guild, channel)
            assert adapter.gateway_client(guild).shard_id == (guild >> 22) % SHARDS
            assert len(ix.callbacks) == 1
    shards = sorted(p["d"]["shard"] for p in fake.gateway.received if p["op"] == 2)
    assert shards == [[0, SHARDS], [1, SHARDS]]
    assert fake.gateway.identify_refused == 0


async def test_fixed_shard_ids_run_only_those(fake: FakeDiscord, tmp_path: Path) -> None:
    places = setup(fake)
    store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    cfg = config(tmp_path, fake, [g for g, _ in places], store, shard_ids=[1])
    async with running(fake, cfg, VirtualTime()) as (app, adapter):
        assert app.instance.shards == {1}
        assert fake.gateway.live_sessions(places[0][0]) == 0
        await ask(fake, *places[1])
        with pytest.raises(RuntimeError, match="does not run in this instance"):
            adapter.gateway_client(places[0][0])


async def session_up(adapter: DiscordAdapter, shard: int) -> None:
    """Until the shard's session runs on ``adapter``, connected and ready (its client is made,
    logged in and identified in turn: each step yields to the loop)."""
    shards = adapter.shards
    assert shards is not None
    async with asyncio.timeout(5):
        for _ in range(1_000_000):
            if shards.up(shard):
                return
            await asyncio.sleep(0)
    raise AssertionError(f"shard {shard}'s session never came up")


@pytest.mark.postgres
async def test_two_instances_divide_the_shards_and_one_takes_over_the_others(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    await _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    places = setup(fake)
    cfg = config(tmp_path, fake, [g for g, _ in places], PG_URL)
    vt = VirtualTime()
    try:
        async with AsyncExitStack() as stack:
            app_a, a = await stack.enter_async_context(running(fake, cfg, vt, schema))
            app_b, b = await stack.enter_async_context(running(fake, cfg, vt, schema))
            assert app_a.instance.shards == {0, 1}  # alone when it started
            assert app_b.instance.shards == set()
            for adapter in (a, b):  # a round each: two instances now, a shard each
                assert adapter.leases is not None
                assert adapter.shards is not None
                await adapter.leases.step(adapter.shards.start, adapter.shards.stop)
            assert a.leases is not None
            assert a.shards is not None
            assert b.leases is not None
            assert b.shards is not None
            await b.leases.step(b.shards.start, b.shards.stop)  # b takes the shard a handed on
            await fake.wait_for(lambda: fake.gateway.live_sessions(places[1][0]) == 2)
            await session_up(b, 1)
            # a's session of shard 1 still runs: both get its events, one carries each out
            assert fake.gateway.live_sessions(places[1][0]) == 2
            assert app_a.instance.shards == {0, 1}
            assert app_b.instance.shards <= {1}  # shown once its session is up (at once)
            during = await fake.inject_slash_command(
                places[1][0], places[1][1], ALICE, "count", [], subcommand="list"
            )
            await fake.wait_for(lambda: len(during.callbacks) == 2)
            assert sorted(c.status < 300 for c in during.callbacks) == [False, True]
            await b.leases.step(b.shards.start, b.shards.stop)  # marks its session up
            await a.leases.step(a.shards.start, a.shards.stop)  # a sees it: lets shard 1 go
            assert app_a.instance.shards == {0}
            assert app_b.instance.shards == {1}
            await fake.wait_for(lambda: all(fake.gateway.live_sessions(g) == 1 for g, _ in places))
            for guild, channel in places:
                assert len((await ask(fake, guild, channel)).callbacks) == 1

            # a leaves: it hands shard 0 on and serves it until b's session of it is up
            leaving = asyncio.create_task(a.leases.hand_over_all(a.shards.stop))
            await fake.wait_for(lambda: not app_a.instance.shards)
            # b took it at once (told by a's NOTIFY), or takes it at this round
            await b.leases.step(b.shards.start, b.shards.stop)
            assert fake.gateway.live_sessions(places[0][0]) >= 1  # never without a session
            await session_up(b, 0)
            await b.leases.step(b.shards.start, b.shards.stop)
            async with asyncio.timeout(5):
                await leaving
            assert app_b.instance.shards == {0, 1}
            await fake.wait_for(lambda: fake.gateway.live_sessions(places[0][0]) == 1)
            for guild, channel in places:
                assert len((await ask(fake, guild, channel)).callbacks) == 1
            assert (await b.health()).connected
    finally:
        await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert fake.gateway.identify_refused == 0
    assert fake.gateway.overlaps == 2  # the two hand-overs, each until the new session was up


@pytest.mark.postgres
async def test_start_up_requests_on_a_shared_store_keep_to_the_reserved_share(
    tmp_path: Path,
) -> None:
    """Another instance may be sending at the holder's full pace (46 of the 50): an instance's
    start-up requests (its login, the gateway's facts, each shard's login, the command sync)
    go at the reserved share's pace, so a fake that lets only that share through answers none
    of them 429."""
    await _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    window = 0.25  # the bot's global window shortened alike: 50 per 0.25 s, 4 kept
    async with FakeDiscord(
        token=TOKEN,
        max_concurrency=SHARDS,
        recommended_shards=SHARDS,
        global_limit_per_s=4,  # the reserved share only: the rest is the holder's
        global_window_s=window,
    ) as fake:
        places = setup(fake)
        cfg = config(
            tmp_path, fake, [g for g, _ in places], PG_URL, limits={"global": [50, window]}
        )
        try:
            async with running(fake, cfg, VirtualTime(), schema) as (app, adapter):
                assert app.instance.shards == {0, 1}
                counted = list(fake.requests)
                assert adapter.global_429s.outside_turns >= 2 + 1 + 2 * SHARDS + len(places)
        finally:
            await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert [r.path for r in counted if r.status == 429] == []
    assert fake.count_429 == 0


@pytest.mark.postgres
async def test_a_stopping_instance_answers_commands_until_the_new_holders_sessions_are_up(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    """A stop (``finish_commands``, the first thing leaving does) hands the shards on and goes on
    answering their commands until the other instance's sessions are up, which it marks at once
    (no round is stepped by hand: the leases last an hour); then the other answers them."""
    await _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    places = setup(fake)
    cfg = config(tmp_path, fake, [g for g, _ in places], PG_URL)
    vt = VirtualTime()
    try:
        async with AsyncExitStack() as stack:
            app_a, a = await stack.enter_async_context(running(fake, cfg, vt, schema))
            app_b, b = await stack.enter_async_context(running(fake, cfg, vt, schema))
            assert app_a.instance.shards == {0, 1}
            assert app_b.instance.shards == set()
            assert a.leases is not None
            assert b.leases is not None
            assert b.shards is not None
            leaving = asyncio.create_task(a.finish_commands())
            for _ in range(500):  # until handed on (its sessions still serve)
                if not a.leases.held:
                    break
                await asyncio.sleep(0.01)
            assert not a.leases.held
            assert not leaving.done()
            during = [await ask(fake, guild, channel) for guild, channel in places]  # a's
            await b.leases.step(b.shards.start, b.shards.stop)  # b takes them
            assert app_b.instance.shards == set()  # not shown before its sessions are up
            async with asyncio.timeout(10):
                await leaving  # b's sessions came up, marked at once: a let its own go
            assert app_b.instance.shards == {0, 1}
            await fake.wait_for(lambda: all(fake.gateway.live_sessions(g) == 1 for g, _ in places))
            after = [await ask(fake, guild, channel) for guild, channel in places]  # b's
            for ix in during + after:
                assert [c.status < 300 for c in ix.callbacks] == [True]
    finally:
        await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_shard_waits_for_its_identify_turn_before_connecting(tmp_path: Path) -> None:
    """Two shards in one identify bucket: the second waits a window for its turn. discord.py
    sends a heartbeat on HELLO and reads nothing until it has identified, so a turn waited for
    on a connected socket leaves the heartbeat's ACK unread that long (discord.py: "Can't keep
    up, shard ID 1 websocket is ... behind"); waited for before connecting, the ACK is read at
    once."""
    window = Window(1, 1.0)
    start = time.monotonic()
    async with FakeDiscord(
        token=TOKEN,
        max_concurrency=1,
        recommended_shards=SHARDS,
        identify_clock=lambda: (time.monotonic() - start) * 5.0 / window.seconds,
    ) as fake:
        places = setup(fake)
        store = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
        cfg = config(tmp_path, fake, [g for g, _ in places], store)
        async with running(fake, cfg, VirtualTime(), identify=window) as (app, adapter):
            assert adapter.shards is not None
            clients = adapter.shards.clients
            assert app.instance.shards == {0, 1}
            latencies = [clients[shard].latency for shard in (0, 1)]
        assert fake.gateway.identify_refused == 0
    assert max(latencies) < window.seconds / 2, latencies
