"""What ingesting one tally costs this process: store statements and CPU per ingest.

    python -m bench.ingest_cost [--counts 200] [--channels 1] [--postgres URL] [--no-postgres]

``bot.ingest.pipeline.Pipeline.ingest`` in this process, on a SQLite file and on a fresh
PostgreSQL schema (``--postgres``, the tests' database by default), for ``--counts`` counts
each with ``--channels`` subscribed channels (``all``): every count's first tally, then the same
figures again (no change), then changed figures. Printed per store and kind of ingest: SQL
statements per ingest (``tests.helpers.statements``; deterministic) and CPU milliseconds per
ingest (``time.process_time``: this process, the driver's threads included, not the database
server's), with the load average (CPU-ms on a loaded machine still move a little; statements do
not).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.conftest import PG_URL, _pg_execute
from tests.helpers import bessemer, statements, tally

KINDS = ("first", "unchanged", "changed")


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def measure(db: Database, counts: int, channels: int) -> dict[str, tuple[float, float]]:
    """Statements and CPU-ms per ingest of each kind, over ``counts`` counts."""
    clock = FakeClock()
    ids = [f"count-{i}" for i in range(counts)]
    async with db.begin() as conn:
        for count_id in ids:
            await count_rows.upsert(conn, replace(bessemer(), id=count_id))
            for c in range(channels):
                where = ChannelRef(Platform("console"), "local", f"c{c}")
                await sub_rows.subscribe(conn, where, count_id, Mode.ALL, by="b", at=clock.now())
    pipeline = Pipeline(db, clock)
    figures = {"first": (84, 201), "unchanged": (84, 201), "changed": (90, 210)}
    out: dict[str, tuple[float, float]] = {}
    for kind in KINDS:
        yes, no = figures[kind]
        with statements() as sent:
            cpu = time.process_time()
            for count_id in ids:
                await pipeline.ingest(tally(yes, no, count_id=count_id, state=TallyState.COUNTING))
            cpu = time.process_time() - cpu
        out[kind] = (len(sent) / counts, cpu * 1000 / counts)
    return out


def show(store: str, figures: dict[str, tuple[float, float]]) -> None:
    for kind in KINDS:
        n, ms = figures[kind]
        print(f"{store:10} {kind:9} {n:5.1f} statements  {ms:6.2f} CPU-ms per ingest  ({load()})")


async def main(counts: int, channels: int, postgres: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Database(f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}") as db:
            show("sqlite", await measure(db, counts, channels))
    if postgres is None:
        return
    schema = f"bench_{uuid.uuid4().hex[:12]}"
    try:
        async with Database(postgres, schema=schema) as db:
            show("postgresql", await measure(db, counts, channels))
    finally:
        await _pg_execute(postgres, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", type=int, default=200)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--postgres", default=PG_URL)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    asyncio.run(main(args.counts, args.channels, None if args.no_postgres else args.postgres))
