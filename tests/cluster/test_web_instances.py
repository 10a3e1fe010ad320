"""Two real ``tallybot run`` processes on one PostgreSQL database serve the public page: a
viewer of either instance gets a tally accepted elsewhere (here by this process, a third
writer on the store), once, through ``NOTIFY``/``LISTEN``; when the instances' listening
connections are cut off by the server, they listen again and a tally accepted right after
still reaches every viewer."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import text

from bot.base.clock import SystemClock
from bot.ingest.pipeline import Pipeline
from bot.store import Database, notices
from tests.cluster.fleet import Instance, fakes, make_fleet, serve_feed, start, stop_all
from tests.cluster.fleet import write_config as fleet_config
from tests.cluster.test_instances import pg, until
from tests.helpers import tally
from tests.web.test_stream import read_event

__all__ = ["pg"]
pytestmark = [pytest.mark.postgres, pytest.mark.slow]  # real processes
COUNT = "bessemer-2021"


def web_url(instance: Instance) -> str:
    """Where the instance's public pages listen (from its log)."""
    for line in instance.log.read_text().splitlines():
        with contextlib.suppress(ValueError):
            record = json.loads(line)
            if record.get("msg") == "public pages listening":
                return str(record["url"])
    raise AssertionError(instance.log.read_text()[-3000:])


async def listeners(db: Database) -> list[int]:
    """The server processes of the connections listening for tallies."""
    async with db.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = :q"
            ),
            {"q": f'LISTEN "{notices.channel(None)}"'},
        )
        return [int(r[0]) for r in rows]


@pytest.mark.timeout(120)
async def test_viewers_of_every_instance_get_every_tally(pg: str, tmp_path: Path) -> None:
    d, s = fakes(1)
    async with d, s, serve_feed() as (_, feed_url):
        fleet = make_fleet(d, s, pg, 1)
        config = tmp_path / "tallybot.toml"
        fleet_config(config, pg, fleet.guild, d, s, 1, feed_url)
        toml = config.read_text().replace(
            'source = {kind = "manual"}', 'public = true\nsource = {kind = "manual"}', 1
        )
        config.write_text(toml + "[web]\nport = 0\n")
        db = await Database(pg).__aenter__()
        try:
            await start(fleet, config, tmp_path, 2)
            urls = [f"{web_url(i)}/c/{COUNT}/events?last=0" for i in fleet.instances]
            pipeline = Pipeline(db, SystemClock())
            async with (
                aiohttp.ClientSession() as http,
                http.get(urls[0]) as one,
                http.get(urls[1]) as two,
            ):
                assert (one.status, two.status) == (200, 200)
                for seq in (1, 2):
                    assert (await pipeline.ingest(tally(100 * seq, 200 * seq))).accepted
                    for resp in (one, two):
                        assert (await read_event(resp))["id"] == str(seq)

                async def both_listening() -> bool:
                    return len(await listeners(db)) == 2

                await until(both_listening, 10)
                async with db.begin() as conn:
                    for pid in await listeners(db):
                        await conn.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
                assert (await pipeline.ingest(tally(300, 600))).accepted  # while they are away
                for resp in (one, two):
                    assert (await read_event(resp))["id"] == "3"
                await until(both_listening, 10)
                assert (await pipeline.ingest(tally(400, 800))).accepted
                for resp in (one, two):
                    assert (await read_event(resp))["id"] == "4"  # and never "3" twice
        finally:
            await stop_all(fleet)
            await db.aclose()
