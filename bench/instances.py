"""Fan-out by one and by three instances on one PostgreSQL database, side by side.

    python -m bench.instances [--channels 2000] [--slack N] [--scale 1] [--instances 1 3]
                              [--postgres URL]

Real ``tallybot run`` processes (``tests/cluster/fleet.py``), each run on a fresh database, fan
one significant update out to N Discord and N Slack channels on the test fakes (served by this
process), which enforce the platforms' limits times ``--scale`` (the bot is told the same):
Discord 50 requests/s per bot; Slack 5 chat.postMessage/s for the workspace and 1 per channel
per second. The instances share one rate budget per platform-wide bucket
(``bot.delivery.shared``), so three are not faster than one: the point is that they keep to the
one budget, lose and double nothing, and share the work.

Printed per run and platform: seconds from the tally accepted to the last channel posted, the
ideal (the last request's start at the enforced rate: (N - 1) / rate), their ratio, 429s, lost,
doubled; per instance its peak RSS, RSS before the fan-out and once the outbox is drained.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import tempfile
import time
from pathlib import Path

from bot.clock import SystemClock
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from tests.cluster.fleet import (
    fakes,
    make_fleet,
    serve_feed,
    start,
    stop_all,
    subscribe_all,
    write_config,
)
from tests.conftest import PG_URL
from tests.delivery.crash_run import either, fresh_postgres
from tests.helpers import tally


async def run(channels: int, slack: int, n: int, scale: int, server_url: str) -> list[str]:
    d, s = fakes(scale)
    lines: list[str] = []
    async with d, s, serve_feed() as (_, feed_url), fresh_postgres(server_url) as url:
        fleet = make_fleet(d, s, url, channels, slack)
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            config = Path(tmp) / "tallybot.toml"
            write_config(config, url, fleet.guild, d, s, scale, feed_url)
            await subscribe_all(fleet)
            try:
                fleet.db = await Database(url).__aenter__()
                await start(fleet, config, Path(tmp), n, limit=120)
                before = {i.name: i.rss_now() for i in fleet.instances}
                began = time.monotonic()
                await Pipeline(fleet.store(), SystemClock()).ingest(tally(84, 201))
                took: dict[str, float] = {}
                for name, done in (
                    ("discord", lambda: fleet.on_d() == channels),
                    ("slack", lambda: fleet.on_s() == slack),
                ):
                    await either(d, s, done, 3600)
                    took[name] = time.monotonic() - began
                async with asyncio.timeout(120):
                    while True:
                        if not await fleet.open_deliveries():
                            break
                        await asyncio.sleep(0.5)
                for i in fleet.instances:
                    i.rss()
                after = {i.name: i.rss_now() for i in fleet.instances}
            finally:
                await stop_all(fleet)
                if fleet.db is not None:
                    await fleet.db.aclose()
        copies = fleet.copies()
        for name, rate, part, n429 in (
            ("discord", 50 * scale, copies[:channels], d.count_429),
            ("slack", 5 * scale, copies[channels:], s.count_429),
        ):
            ideal = (len(part) - 1) / rate
            lines.append(
                f"| {n} | {name} | {len(part):,} | {took[name]:.1f} | {ideal:.1f} | "
                f"{took[name] / ideal:.3f} | {n429} | {sum(1 for c in part if c == 0)} | "
                f"{sum(1 for c in part if c > 1)} |"
            )
        for i in fleet.instances:
            lines.append(
                f"|   instance {i.name} | peak {i.peak_rss_kb // 1024} MB | "
                f"before {before[i.name] // 1024} MB | drained {after[i.name] // 1024} MB |"
            )
    return lines


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=2000, help="Discord channels")
    parser.add_argument("--slack", type=int, default=None, help="Slack channels (default as many)")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--postgres", default=PG_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    print(f"limits x{args.scale}")
    print("| instances | platform | channels | seconds | ideal | ratio | 429s | lost | doubled |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in args.instances:
        slack = args.channels if args.slack is None else args.slack
        for line in await run(args.channels, slack, n, args.scale, args.postgres):
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
