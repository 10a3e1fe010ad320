"""Fan-out by one and by three instances on one PostgreSQL database, side by side.

    python -m bench.instances [--channels 2000] [--slack N] [--scale 1] [--instances 1 3]
                              [--final] [--postgres URL]

Real ``tallybot run`` processes (``tests/cluster/fleet.py``), each run on a fresh database, fan
one significant update (``--final``: the count's final, with its chart) out to N Discord and N
Slack channels on the test fakes (served by this process), which enforce the platforms' limits
times ``--scale`` (the bot is told the same): Discord 50 requests/s per bot; Slack 5
chat.postMessage/s for the workspace and 1 per channel per second. The instances share one rate
budget per platform-wide bucket (``bot.delivery.shared``), so three are not faster than one:
the point is that they keep to the one budget, lose and double nothing, and share the work.

The tally is pushed to the first instance (``POST /api/counts/ID/tally``), as it would arrive.
Printed per run and platform: seconds from the push to the last post's arrival at the
fake, the ideal (the last request's start at the enforced rate: (N - 1) / rate), their ratio,
429s, lost, doubled; the fake's view of the timing (``bench/timing.py``: first post, steady
rate, gaps, the most requests in any one window); per instance its peak RSS, RSS before the
fan-out and once the outbox is drained (after ``--settle`` seconds), and the same of its chart
process (``bot.charts.process``: sampled every 0.2 s while it lives); the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from bench.timing import Timing, discord_timing, slack_timing
from bot.ops.push_client import push
from bot.store import Database
from tests.cluster.fleet import (
    PYTHON_M,
    Fleet,
    console_script,
    fakes,
    make_fleet,
    serve_feed,
    start,
    stop_all,
    subscribe_all,
    write_config,
)
from tests.conftest import PG_URL
from tests.delivery.crash_run import fresh_postgres

COUNT = "bessemer-2021"
SECRET = "bench-push-secret"
POLL_S = 0.2
"""How often the bench looks whether every channel got its message (cheaply: the times come
from the fakes' records, so the polling costs the fakes' event loop next to nothing)."""


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def until(check: Callable[[], bool], limit: float) -> None:
    async with asyncio.timeout(limit):
        while True:
            if check():
                return
            await asyncio.sleep(POLL_S)


async def run(
    channels: int,
    slack: int,
    n: int,
    scale: int,
    server_url: str,
    *,
    final: bool,
    settle: float,
    command: tuple[str, ...] = PYTHON_M,
) -> list[str]:
    d, s = fakes(scale)
    lines: list[str] = []
    store = fresh_sqlite() if server_url == "sqlite" else fresh_postgres(server_url)
    async with d, s, serve_feed() as (_, feed_url), store as url:
        fleet = make_fleet(d, s, url, channels, slack)
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            config = Path(tmp) / "tallybot.toml"
            write_config(config, url, fleet.guild, d, s, scale, feed_url)
            await subscribe_all(fleet)
            try:
                fleet.db = await Database(url).__aenter__()
                await start(fleet, config, Path(tmp), n, limit=120, command=command)
                await asyncio.sleep(2.0)  # past the start-up requests' window
                before = {i.name: i.rss_now() for i in fleet.instances}
                load_before = load()
                news: dict[str, object] = (
                    {"votes": {"yes": 1300, "no": 1915}, "state": "final"}
                    if final
                    else {"votes": {"yes": 84, "no": 201}}
                )
                sampling = asyncio.create_task(sample(fleet))  # the chart process's peak
                began = time.monotonic()
                # Pushed to the first instance, as a tally comes in (its worker wakes at once).
                answer = await push(
                    fleet.instances[0].url, COUNT, json.dumps(news).encode(), SECRET,
                    now=time.time(),
                )  # fmt: skip
                assert answer.exit_code == 0, answer
                accepted = time.monotonic() - began
                await until(lambda: fleet.on_d() == channels, 3600)
                await until(lambda: fleet.on_s() == slack, 3600)
                await until_drained(fleet, 300)
                load_after = load()
                await asyncio.sleep(settle)
                sampling.cancel()
                for i in fleet.instances:
                    i.rss()
                after = {i.name: i.rss_now() for i in fleet.instances}
                children_after = {i.name: i.children_rss_now() for i in fleet.instances}
                measured = time.monotonic() - began
            finally:
                await stop_all(fleet)
                if fleet.db is not None:
                    await fleet.db.aclose()
            logged = complaints(fleet)
        copies = fleet.copies()
        kind = "final" if final else "update"
        for name, rate, part, n429, t in (
            ("discord", 50 * scale, copies[:channels], d.count_429, discord_timing(d, began, 1.0)),
            ("slack", 5 * scale, copies[channels:], s.count_429, slack_timing(s, began, 1.0)),
        ):
            lines += row(n, f"{name} {kind}", rate, part, n429, t)
        for i in fleet.instances:
            lines.append(
                f"|   instance {i.name} | peak {i.peak_rss_kb // 1024} MB | "
                f"before {before[i.name] // 1024} MB | drained {after[i.name] // 1024} MB "
                f"({after[i.name] / max(1, before[i.name]):.2f}x) | its chart process: "
                f"peak {i.children_peak_kb // 1024} MB, "
                f"drained {children_after[i.name] // 1024} MB |"
            )
        lines.append(f"|   drained measured {measured:.0f} s after the push |")
        lines.append(
            f"|   the push answered (the tally stored, its messages queued) in {accepted:.2f} s |"
        )
        lines.append(f"|   {load_before} at the start, {load_after} at the end |")
        lines += logged
    return lines


@contextlib.asynccontextmanager
async def fresh_sqlite() -> AsyncIterator[str]:
    """The URL of a new SQLite file (one instance only), removed after."""
    with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
        yield f"sqlite+aiosqlite:///{Path(tmp) / 'tallybot.sqlite3'}"


def complaints(fleet: Fleet) -> list[str]:
    """The warnings and errors the instances logged, each message once with its count."""
    seen: Counter[str] = Counter()
    for i in fleet.instances:
        for line in i.log.read_text().splitlines():
            with contextlib.suppress(ValueError):
                record = json.loads(line)
                if record.get("level") in ("warning", "error") or "memory" in record["msg"]:
                    seen[f"{i.name} {record['level']}: {str(record.get('msg'))[:120]}"] += 1
    return [f"|   {n} x {msg} |" for msg, n in seen.most_common(8)]


async def sample(fleet: Fleet) -> None:
    """Samples the instances' children's memory (a child's peak goes with it)."""
    while True:
        for i in fleet.instances:
            i.rss()
        await asyncio.sleep(POLL_S)


async def until_drained(fleet: Fleet, limit: float) -> None:
    async with asyncio.timeout(limit):
        while True:
            if not await fleet.open_deliveries():
                return
            await asyncio.sleep(0.5)


def row(n: int, name: str, rate: float, part: list[int], n429: int, t: Timing) -> list[str]:
    ideal = (len(part) - 1) / rate
    return [
        f"| {n} | {name} | {len(part):,} | {t.last:.1f} | {ideal:.1f} | "
        f"{t.last / ideal:.3f} | {n429} | {sum(1 for c in part if c == 0)} | "
        f"{sum(1 for c in part if c > 1)} |",
        f"|   {t.line(rate)} |",
    ]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=2000, help="Discord channels")
    parser.add_argument("--slack", type=int, default=None, help="Slack channels (default as many)")
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--final", action="store_true", help="a final, with its chart")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds after draining")
    parser.add_argument(
        "--console-script", action="store_true", help="start `tallybot run`, not python -m bot"
    )
    parser.add_argument("--postgres", default=PG_URL, help='"sqlite": a SQLite file instead')
    args = parser.parse_args()
    os.environ["TALLYBOT_PUSH_SECRET"] = SECRET  # the instances take pushes
    logging.basicConfig(level=logging.WARNING)
    print(f"limits x{args.scale}; {load()}")
    print("| instances | platform | channels | seconds | ideal | ratio | 429s | lost | doubled |")
    print("|---|---|---|---|---|---|---|---|---|")
    slack = args.channels if args.slack is None else args.slack
    for n in args.instances:
        lines = await run(
            args.channels, slack, n, args.scale, args.postgres, final=args.final,
            settle=args.settle, command=console_script() if args.console_script else PYTHON_M,
        )  # fmt: skip
        for line in lines:
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
