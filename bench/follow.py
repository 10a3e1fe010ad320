"""A count's final to its followers by direct message, on the Discord test fake at the limits it
enforces, while channels keep getting another count's posts.

    python -m bench.follow [--followers 10000] [--channels 100] [--every 5]

The whole bot (``bot.runtime.app.App``, SQLite store, the real discord.py) against FakeDiscord
(50 requests/s per bot, 5 messages per 5 s per channel; a DM refused unless the person shares a
server with the bot). ``--followers`` members follow ``bessemer-2021`` (``final``; their DM
channels opened before, as ``follow`` does); ``--channels`` channels are subscribed to another
count, ``staten-island-2022`` (``all``), which gets an update every ``--every`` seconds while the
final goes out. Printed: seconds from the final accepted to the last DM posted, the ideal time
the global limit allows for those DMs, 429s, followers who got nothing (lost) or more than one
copy (doubled); and the channels' latency (an update of the other count accepted -> posted in
all its channels) during the fan-out, p50 and max, beside the same with no followers
(``--followers 0``) and the ideal for one update alone. And what the fan-out cost this process
(the bot and the fake, both in it), which a shared machine does not blur as it does seconds: CPU
seconds per 1,000 DMs and store statements per DM, from the final accepted to the last DM
posted (the channels' updates meanwhile included). Load average printed with them.

``--profile FILE``: the same window under cProfile, its statistics written to ``FILE``
(``python -m pstats FILE``) and the Python calls per DM printed (the bot's and the fake's).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.fanout import DISCORD_GLOBAL, ideal
from bot.domain.model import Tally, TallyState
from bot.domain.subscription import ChannelRef, Hear, Mode, Platform, Wants
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store import subscriptions as sub_rows
from tests.fakes.discord_fake import FakeDiscord
from tests.helpers import statements

DISCORD = Platform("discord")
CHOICES = [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No union"}]
BESSEMER = {
    "id": "bessemer-2021", "title": "Amazon BHM1 union election, Bessemer AL",
    "tie_holder": "no", "received": 3215, "choices": CHOICES, "source": {"kind": "manual"},
}  # fmt: skip
STATEN = {**BESSEMER, "id": "staten-island-2022", "title": "Amazon JFK8, Staten Island NY"}
AT = datetime(2021, 4, 9, tzinfo=UTC)
FINAL = Tally(
    "bessemer-2021", {"yes": 738, "no": 1798}, AT, "bench",
    challenged=505, received=3041, state=TallyState.FINAL,
)  # fmt: skip


def routine(k: int) -> Tally:
    return Tally("staten-island-2022", {"yes": 100 + 10 * k, "no": 120 + 10 * k}, AT, "bench")


def posts(fake: FakeDiscord, channel: int) -> int:
    return sum(1 for m in fake.messages(channel) if m.author_id == fake.bot_user_id)


async def run(
    followers: int, channels: int, every: float, profile: str | None = None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        async with FakeDiscord() as fake:
            guild = fake.add_guild("bench")
            chans = [fake.add_channel(guild, f"c{i}") for i in range(channels)]
            users = [10**17 + i for i in range(followers)]
            for u in users:
                fake.add_member(guild, u, f"u{u}")
            dms = [fake.dm_channel(u) for u in users]
            os.environ["DISCORD_TOKEN"] = fake.token
            raw = {
                "store": {"url": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"},
                "counts": [BESSEMER, STATEN],
                "discord": {
                    "api_base": fake.base_url,
                    "gateway_url": fake.gateway_url,
                    "guilds": [guild],
                },
            }
            cfg = parse(raw, Path(tmp) / "bench.toml")
            async with App(cfg, adapter_factories(cfg), poll=False) as app:
                now = datetime.now(UTC)
                where = ChannelRef(DISCORD, str(guild), str(chans[0]) if chans else "0")
                async with app.db.begin() as conn:
                    for c in cfg.counts:
                        await count_rows.upsert(conn, c.count)
                    for ch in chans:
                        ref = ChannelRef(DISCORD, str(guild), str(ch))
                        await sub_rows.subscribe(
                            conn, ref, "staten-island-2022", Mode.ALL, by="bench", at=now
                        )
                    final = Wants(frozenset({Hear.FINAL}))
                    for u, dm in zip(users, dms, strict=True):
                        await follow_rows.follow(
                            conn, where, str(u), "bessemer-2021", final, inbox=str(dm), at=now
                        )
                await app.pipeline.ingest(routine(0))  # the channels' first post, before
                await until(lambda: all(posts(fake, c) >= 1 for c in chans), 120)
                await asyncio.sleep(1.5)
                profiler = cProfile.Profile() if profile is not None else None
                with statements() as sent:
                    if profiler is not None:
                        profiler.enable()
                    cpu = time.process_time()
                    start = time.perf_counter()
                    posted_before = sum(posts(fake, c) for c in chans)
                    posted = 0
                    await app.pipeline.ingest(FINAL)
                    latencies: list[float] = []
                    k, done_at = 0, None
                    while done_at is None or k < 3:  # at least 3 updates, with no followers too
                        k += 1
                        t0 = time.perf_counter()
                        await app.pipeline.ingest(routine(k))
                        await until(lambda k=k: all(posts(fake, c) >= k + 1 for c in chans), 600)
                        latencies.append(time.perf_counter() - t0)
                        if done_at is None and all(posts(fake, d) >= 1 for d in dms):
                            done_at = time.perf_counter()
                            cpu, ran = time.process_time() - cpu, len(sent)
                            calls = stopped(profiler, profile)
                            posted = sum(posts(fake, c) for c in chans) - posted_before
                        await asyncio.sleep(max(0.0, every - (time.perf_counter() - t0)))
                    if done_at is None:
                        done_at = time.perf_counter()
                        cpu, ran = time.process_time() - cpu, len(sent)
                        calls = stopped(profiler, profile)
                        posted = sum(posts(fake, c) for c in chans) - posted_before
                got = [posts(fake, d) for d in dms]
                return {
                    "followers": followers,
                    "channels": channels,
                    "seconds": (done_at - start) if followers else 0.0,
                    "ideal": ideal(followers, DISCORD_GLOBAL) if followers else 0.0,
                    "channel_posts": posted,
                    "http_429": fake.count_429,
                    "lost": sum(1 for g in got if g == 0),
                    "doubled": sum(1 for g in got if g > 1),
                    "latency_p50": statistics.median(latencies),
                    "latency_max": max(latencies),
                    "latency_ideal": ideal(channels, DISCORD_GLOBAL),
                    "updates": len(latencies),
                    "cpu_per_1000": 1000 * cpu / followers if followers else 0.0,
                    "statements_per_dm": ran / followers if followers else 0.0,
                    "calls_per_dm": calls / followers if followers and calls else None,
                }


def stopped(profiler: cProfile.Profile | None, path: str | None) -> int:
    """Stop ``profiler`` (if any), write its statistics to ``path``; how many calls it saw."""
    if profiler is None or path is None:
        return 0
    profiler.disable()
    profiler.dump_stats(path)
    return int(pstats.Stats(profiler).total_calls)  # type: ignore[attr-defined]


async def until(check: Any, limit: float) -> None:
    deadline = time.perf_counter() + limit
    while not check():
        if time.perf_counter() > deadline:
            return
        await asyncio.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--followers", type=int, default=10_000)
    parser.add_argument("--channels", type=int, default=100)
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--profile", help="a file for the fan-out's cProfile statistics")
    args = parser.parse_args()
    import logging

    logging.disable(logging.CRITICAL)
    r = asyncio.run(run(args.followers, args.channels, args.every, args.profile))
    ratio = r["seconds"] / r["ideal"] if r["ideal"] else float("nan")
    limit, window = DISCORD_GLOBAL
    # The channels' posts meanwhile draw on the same budget: the DMs' ideal is what is left.
    sent_rate = (r["followers"] + r["channel_posts"]) / r["seconds"] if r["seconds"] else 0.0
    left = limit / window - args.channels / args.every
    shared = r["followers"] / left if left > 0 else float("nan")
    calls = f"{r['calls_per_dm']:,.0f} Python calls per DM; " if r["calls_per_dm"] else ""
    print(
        f"followers {r['followers']}, channels {r['channels']}: final to every follower in "
        f"{r['seconds']:.1f} s (ideal {r['ideal']:.1f} s, ratio {ratio:.2f}; with the channels' "
        f"{r['channel_posts']:,} posts meanwhile on the same budget, ideal {shared:.1f} s, ratio "
        f"{r['seconds'] / shared:.2f}; the bot's requests {sent_rate:.1f}/s of {limit / window:g}"
        f"/s); 429s "
        f"{r['http_429']}, lost {r['lost']}, doubled {r['doubled']}; channels' latency during "
        f"it over {r['updates']} updates: p50 {r['latency_p50']:.1f} s, max "
        f"{r['latency_max']:.1f} s (one update alone, ideal {r['latency_ideal']:.1f} s); "
        f"CPU {r['cpu_per_1000']:.1f} s per 1,000 DMs, {r['statements_per_dm']:.1f} store "
        f"statements per DM; {calls}"
        f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
