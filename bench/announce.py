"""Announcement channels: a count's final, published to N Discord channels that follow the
operator's announcement channel, against posting it channel by channel.

    python -m bench.announce [--followers 10,1000,100000]

For each N: the Discord fake with one announcement channel in the operator's server, subscribed
with ``final publish``, and N channels of other servers following it (the bot need not be in
those servers: Discord copies, not the bot). A final tally is accepted; the run ends when every
follower has its copy. Printed per N: the requests the bot made from the tally accepted to the
last copy (the fake counts every REST request), the copies, followers that got none (lost) or
more than one (doubled), the 429s, the wall time, the peak RSS (the fake and its copies
included), and the time channel-by-channel posting needs at Discord's 50 requests a second
(N requests, one window of 50 per second: ``(ceil(N / 50) - 1)`` seconds at the least).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.fanout import COUNT, FINAL, wait_until
from bot.domain.subscription import ChannelRef, Hear, Platform, Wants
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.announce import make_follower
from tests.fakes.discord_fake.models import FLAG_IS_CROSSPOST, Channel

GLOBAL_PER_S = 50


@dataclass
class Row:
    followers: int
    requests: int
    copies: int
    lost: int
    doubled: int
    http_429: int
    seconds: float
    channel_by_channel_s: float
    peak_rss_mb: float


def posting_time(n: int) -> float:
    """The least time N posts take at 50 requests a second."""
    return float(math.ceil(n / GLOBAL_PER_S) - 1)


async def run(n: int) -> Row:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord(record=False) as fake:
            guild = fake.add_guild("Bessemer Watch")
            announce = fake.add_channel(guild, "announcements", kind=5)
            followers = []
            for i in range(n):  # channels of other servers, which Discord serves, not the bot
                cid = fake.snowflakes.next()
                fake.channels[cid] = Channel(cid, 10_000_000 + i, "news", 0)
                make_follower(fake, announce, cid)
                followers.append(cid)
            raw: dict[str, Any] = {
                "store": {"url": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"},
                "counts": [COUNT],
                "discord": {
                    "api_base": fake.base_url,
                    "gateway_url": fake.gateway_url,
                    "guilds": [guild],
                },
            }
            os.environ["DISCORD_TOKEN"] = fake.token
            cfg = parse(raw, Path(tmp) / "bench.toml")
            async with App(cfg, adapter_factories(cfg), poll=False) as app:
                async with app.db.begin() as conn:
                    await count_rows.upsert(conn, cfg.counts[0].count)
                    await sub_rows.subscribe(
                        conn,
                        ChannelRef(Platform("discord"), str(guild), str(announce)),
                        "bessemer-2021",
                        Wants(frozenset({Hear.FINAL}), publish=True),
                        by="bench",
                        at=datetime.now(UTC),
                    )
                await asyncio.sleep(1.5)  # the start-up's requests are behind us
                before = fake.request_count
                start = time.perf_counter()
                await app.pipeline.ingest(FINAL)
                last = followers[-1]
                await wait_until(lambda: bool(fake.messages(last)), fake, limit=600)
                seconds = time.perf_counter() - start
                await app.idle()
                requests = fake.request_count - before
            got = [
                sum(1 for m in fake.messages(c) if m.flags & FLAG_IS_CROSSPOST) for c in followers
            ]
            return Row(
                n,
                requests,
                sum(got),
                sum(1 for g in got if g == 0),
                sum(1 for g in got if g > 1),
                fake.count_429,
                seconds,
                posting_time(n),
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            )


async def main(sizes: list[int]) -> None:
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")
    print(
        f"{'followers':>9} {'requests':>8} {'copies':>7} {'lost':>4} {'doubled':>7} "
        f"{'429s':>4} {'seconds':>8} {'posting 1 by 1':>14} {'peak MB':>8}"
    )
    for n in sizes:
        r = await run(n)
        print(
            f"{r.followers:>9,} {r.requests:>8} {r.copies:>7,} {r.lost:>4} {r.doubled:>7} "
            f"{r.http_429:>4} {r.seconds:>8.2f} {r.channel_by_channel_s / 60:>11.1f} min "
            f"{r.peak_rss_mb:>8.0f}"
        )
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", default="10,1000,100000")
    args = parser.parse_args()
    asyncio.run(main([int(x) for x in args.followers.split(",")]))
