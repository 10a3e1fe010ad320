"""How many commands a second the core carries out: ``subscribe`` from many channels at once.

    python -m bench.command_rate [--commands 1000] [--store sqlite|postgres|both] [--profile]

The core only (``bot.commands.handler.Commands.handle``, the path every adapter takes after it
has acknowledged a command), on a fresh store with the count ``bessemer-2021`` (public, a tally
stored): ``--commands`` members each subscribe a channel of their own, all at once. Printed, with
the load average: per store, the seconds from the first command to the last answer and the
commands a second, which depend on how busy the machine is; and two figures that hardly do: the
CPU time of the process per command (its threads' too), and on SQLite the round trips to the
driver's thread per command (each waits for the event loop and the thread to be scheduled, so on
a loaded machine they, not the SQL, set the pace). ``--profile``: where the time went (cProfile).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import logging
import os
import pstats
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiosqlite

from bot.base.clock import SystemClock
from bot.commands.handler import Commands
from bot.commands.request import Request
from bot.commands.throttle import Throttle
from bot.delivery.pacing import Window
from bot.domain.subscription import ChannelRef, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from tests.conftest import PG_URL
from tests.delivery.crash_run import fresh_postgres
from tests.helpers import bessemer, tally


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


class Hops:
    """Counts the calls handed to aiosqlite's thread while the block runs."""

    def __init__(self) -> None:
        self.count = 0
        self._original = aiosqlite.Connection._execute

    def __enter__(self) -> None:
        original = self._original

        async def counted(conn: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
            self.count += 1
            return await original(conn, fn, *args, **kw)

        aiosqlite.Connection._execute = counted  # type: ignore[method-assign]

    def __exit__(self, *exc: object) -> None:
        aiosqlite.Connection._execute = self._original  # type: ignore[method-assign]


def request(i: int) -> Request:
    channel = ChannelRef(Platform("discord"), "g1", f"c{i}")
    return Request(channel, f"u{i}", f"member-{i}", "subscribe bessemer-2021", place="server")


async def rate(url: str, n: int, profile: bool) -> str:
    clock = SystemClock()
    async with Database(url) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, replace(bessemer(), public=True))
        await Pipeline(db, clock).ingest(tally(463, 1100, received=3215))
        roomy = Throttle(clock, per_user=Window(1000, 1.0), public_per_channel=Window(1000, 1.0))
        commands = Commands(db, Pipeline(db, clock), clock, throttle=roomy)
        await commands.handle(request(-1))  # warm: the first of everything imports and plans
        profiler = cProfile.Profile() if profile else None
        hops = Hops()
        cpu = time.process_time()
        began = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        with hops:
            replies = await asyncio.gather(*(commands.handle(request(i)) for i in range(n)))
        if profiler is not None:
            profiler.disable()
        took = time.perf_counter() - began
        cpu = time.process_time() - cpu
        async with db.connect() as conn:
            stored = len(await sub_rows.for_count(conn, "bessemer-2021"))
    failed = [r.text for r in replies if not r.ok]
    if failed:
        raise AssertionError(f"{len(failed)} failed, e.g. {failed[0]}")
    trips = f", {hops.count / n:.1f} round trips" if url.startswith("sqlite") else ""
    line = (
        f"{n:,} subscribes: {took:.2f} s, {n / took:.0f} commands/s, {stored - 1:,} stored; "
        f"per command {cpu / n * 1000:.2f} ms CPU{trips} ({load()})"
    )
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        line += "\n" + out.getvalue()
    return line


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=1000)
    parser.add_argument("--store", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--postgres", default=PG_URL)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.store in ("sqlite", "both"):
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            url = f"sqlite+aiosqlite:///{Path(tmp) / 'tallybot.sqlite3'}"
            print("SQLite:", await rate(url, args.commands, args.profile), flush=True)
    if args.store in ("postgres", "both"):
        async with fresh_postgres(args.postgres) as url:
            print("PostgreSQL:", await rate(url, args.commands, args.profile), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
