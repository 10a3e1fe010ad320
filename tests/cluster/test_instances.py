"""Three real ``tallybot run`` processes on one PostgreSQL database act as one bot.

The fakes (Discord, Slack) and a JSON feed run in this process, enforcing the platforms' limits
times ``SCALE`` (the bot is told the same), so that a fan-out takes seconds. A final is queued
to ``CHANNELS`` Discord and as many Slack channels; one instance is killed with SIGKILL in the
middle of the fan-out: every channel shows the final exactly once and the fakes answered no
429 (the instances share one rate budget per platform-wide bucket). The holder of a polled
count's lease is killed: another instance polls it within two intervals plus 10 s, and no tally
is stored twice.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.base.clock import SystemClock
from bot.domain.model import TallyState
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import tallies as tally_rows
from tests.cluster.fleet import (
    FEED_COUNT,
    Fleet,
    fakes,
    make_fleet,
    serve_feed,
    start,
    stop_all,
    subscribe_all,
    write_config,
)
from tests.conftest import PG_URL, _require_postgres
from tests.delivery.crash_run import either, fresh_postgres
from tests.helpers import tally

pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # real processes
CHANNELS = 200
SCALE = 10
INTERVAL = 1.0


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def pg() -> AsyncIterator[str]:
    await _require_postgres()
    async with fresh_postgres(PG_URL) as url:
        yield url


async def until(check: Callable[[], Awaitable[bool]], limit: float) -> None:
    """Wait (re-checking every 0.1 s) until ``check()`` is true, at most ``limit`` seconds."""
    async with asyncio.timeout(limit):
        while True:
            if await check():
                return
            await asyncio.sleep(0.1)


@pytest.mark.timeout(150)
async def test_three_instances_deliver_a_final_once_to_every_channel_when_one_is_killed(
    pg: str, tmp_path: Path
) -> None:
    d, s = fakes(SCALE)
    async with d, s, serve_feed() as (_, feed_url):
        fleet = make_fleet(d, s, pg, CHANNELS)
        config = tmp_path / "tallybot.toml"
        write_config(config, pg, fleet.guild, d, s, SCALE, feed_url)
        await subscribe_all(fleet)
        try:
            fleet.db = await Database(pg).__aenter__()
            await start(fleet, config, tmp_path, 3)
            final = tally(1300, 1915, received=3215, state=TallyState.FINAL)
            result = await Pipeline(fleet.store(), SystemClock()).ingest(final)
            assert result.accepted
            await either(d, s, lambda: fleet.on_d() + fleet.on_s() >= CHANNELS, 60)
            # Kill the instance with the most deliveries in hand.
            claims = {i.name: await fleet.claimed_by(i.name) for i in fleet.instances}
            victim = max(fleet.instances, key=lambda i: claims[i.name])
            await fleet.kill(victim)
            killed_at = fleet.on_d() + fleet.on_s()
            assert killed_at < 2 * CHANNELS, "it finished before the kill"
            left = await fleet.claimed_by(victim.name)
            assert left > 0, claims
            await either(d, s, lambda: fleet.on_d() == fleet.on_s() == CHANNELS, 60)

            async def drained() -> bool:
                return await fleet.open_deliveries() == 0

            await until(drained, 30)
        finally:
            await stop_all(fleet)
            await fleet.store().aclose()
        copies = fleet.copies()
        logs = "".join(i.log.read_text()[-2000:] for i in fleet.instances)
        assert sum(1 for n in copies if n == 0) == 0, logs  # none lost
        assert sum(1 for n in copies if n > 1) == 0, logs  # none doubled
        print(
            f"\nkilled {victim.name} at {killed_at} of {2 * CHANNELS} messages, "
            f"holding {left} claims; "
            f"429s {d.count_429 + s.count_429}; peak RSS "
            + ", ".join(f"{i.name} {i.peak_rss_kb // 1024} MB" for i in fleet.instances)
        )
        posts = [c for c in s._web.calls if c.method == "chat.postMessage"]
        limited = [
            (
                c.args.get("channel"),
                sum(1 for x in posts if x.status != 429 and c.time - 1.0 < x.time <= c.time),
                [
                    round(c.time - x.time, 3)
                    for x in posts
                    if x is not c and x.args.get("channel") == c.args.get("channel")
                ],
            )
            for c in posts
            if c.status == 429
        ]
        assert (d.count_429, s.count_429) == (0, 0), limited


@pytest.mark.timeout(120)
async def test_a_dead_poll_lease_holders_count_is_taken_over_and_no_tally_stored_twice(
    pg: str, tmp_path: Path
) -> None:
    d, s = fakes(SCALE)
    async with d, s, serve_feed() as (feed, feed_url), aiohttp.ClientSession() as http:
        fleet = make_fleet(d, s, pg, 0)
        config = tmp_path / "tallybot.toml"
        write_config(config, pg, fleet.guild, d, s, SCALE, feed_url)
        try:
            await start(fleet, config, tmp_path, 3)

            async def holder() -> list[str]:
                out = []
                for i in fleet.instances:
                    if i.alive():
                        held = (await i.healthz(http))["instance"]
                        assert isinstance(held, dict)
                        if held["counts"]:  # how many it polls: FEED_COUNT is the one polled
                            out.append(i.name)
                return out

            async def one_holder() -> bool:
                return len(await holder()) == 1

            await until(one_holder, 20)
            first, began = len(feed.polls), time.monotonic()

            async def polled(n: int) -> bool:
                return len(feed.polls) >= first + n

            await until(lambda: polled(5), 10)
            rate = 5 / (time.monotonic() - began)
            assert rate < 1.5 / INTERVAL, f"{rate:.1f} polls a second: more than one poller"
            [name] = await holder()
            dead = next(i for i in fleet.instances if i.name == name)
            feed.doc = {"yes": 90, "no": 201, "status": "counting"}
            await fleet.kill(dead)
            killed = time.monotonic()

            async def taken_over() -> bool:
                return len(await holder()) == 1

            await until(taken_over, 2 * INTERVAL + 10 + 5)
            took = time.monotonic() - killed
            print(f"\npoll lease taken over {took:.1f} s after its holder was killed")
            assert took <= 2 * INTERVAL + 10

            async def stored() -> bool:
                async with Database(pg) as db, db.connect() as conn:
                    return len(await tally_rows.history(conn, FEED_COUNT)) >= 2

            await until(stored, 10)
            first = len(feed.polls)
            await until(lambda: polled(3), 10)  # and a few polls more
        finally:
            stopped_in = await stop_all(fleet)
        assert stopped_in < 5, f"the instances took {stopped_in:.1f} s to stop on SIGTERM"
        async with Database(pg) as db, db.connect() as conn:
            history = await tally_rows.history(conn, FEED_COUNT)
        assert [(t.seq, t.votes["yes"]) for t in history] == [(1, 84), (2, 90)]
        assert isinstance(fleet, Fleet)
