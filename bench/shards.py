"""Discord shard takeover: how long after its holder is killed a shard runs again elsewhere.

    python -m bench.shards [--instances 3] [--shards 3] [--lease 3] [--kills 3]
                           [--postgres URL]

Real ``tallybot run`` processes (``tests/cluster/fleet.py``) on a fresh PostgreSQL database
divide ``--shards`` Discord shards of the test fake (``max_concurrency`` 1, the identify limit
enforced on the real clock). Each round kills the holder of a shard with SIGKILL and measures the
seconds until another instance runs it, its session is the one connected for the shard's
guilds, and a slash command there is answered; then a new instance is started in its place and
the shards settle again. Printed: each takeover and the bound (``--lease`` plus a third, plus a
turn to identify, 5.6 s), the fake's refused identifies and overlapping sessions (both 0).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import tempfile
import time
from pathlib import Path

import aiohttp

from tests.cluster import test_shards_run as scenario
from tests.cluster.fleet import Fleet, start, stop_all
from tests.conftest import PG_URL
from tests.delivery.crash_run import fresh_postgres
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack


async def run(instances: int, shards: int, lease: float, kills: int, server_url: str) -> None:
    scenario.SHARDS, scenario.LEASE_S = shards, lease
    d = FakeDiscord(recommended_shards=shards, max_concurrency=1, identify_clock=time.monotonic)
    async with d, FakeSlack() as s, fresh_postgres(server_url) as url:
        guilds = [d.add_guild(f"shard {n}", shard=(n, shards)) for n in range(shards)]
        channels = [d.add_channel(g, "results") for g in guilds]
        for g in guilds:
            d.add_member(g, scenario.ALICE, "alice")
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            config = Path(tmp) / "tallybot.toml"
            scenario.write_config(config, url, d, guilds)
            fleet = Fleet(d, s, url, guilds[0], [], [])
            try:
                began = time.monotonic()
                await start(fleet, config, Path(tmp), instances, limit=180)
                async with aiohttp.ClientSession() as http:
                    held = await scenario.settled(http, fleet, d, guilds)
                    print(f"{instances} instances, {shards} shards settled in "
                          f"{time.monotonic() - began:.1f} s: {held}")  # fmt: skip
                    for k in range(kills):
                        shard = k % shards
                        victim = next(i for i in fleet.instances if i.name == held[shard])
                        killed = time.monotonic()
                        await fleet.kill(victim)
                        held = await scenario.settled(http, fleet, d, guilds)
                        await scenario.ask(d, guilds[shard], channels[shard])
                        took = time.monotonic() - killed
                        print(f"kill {victim.name} (shard {shard}): taken over by "
                              f"{held[shard]} in {took:.2f} s")  # fmt: skip
                        await start(fleet, config, Path(tmp), 1, limit=180)
                        held = await scenario.settled(http, fleet, d, guilds)
            finally:
                await stop_all(fleet)
    bound = lease + lease / 3 + 5.0 / 0.9
    refused, overlaps, load = d.gateway.identify_refused, d.gateway.overlaps, os.getloadavg()[0]
    print(f"bound: {bound:.1f} s (+ READY); identify refused: {refused}; "
          f"overlapping sessions: {overlaps}; load: {load:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("--shards", type=int, default=3)
    parser.add_argument("--lease", type=float, default=3.0)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--postgres", default=PG_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(args.instances, args.shards, args.lease, args.kills, args.postgres))


if __name__ == "__main__":
    main()
