"""Polling many counts on ``http_json`` feeds with ETags, by one instance and by three.

    python -m bench.polling [--counts 1000] [--interval 2] [--changes 3] [--instances 1 3]
                            [--warmup 20] [--window 30] [--slack 1] [--postgres URL]

Real ``tallybot run`` processes (``tests/cluster/fleet.py``) on a fresh PostgreSQL database
each run, with both platforms' fakes connected (nothing subscribed). This process serves
``--counts`` JSON feeds, one per count, each with an ETag (304 when unchanged), and changes
``--changes`` feeds a second, chosen at random. The feed server tells the instances apart by
the connection a request came on: its local port is matched to the instance whose process owns
the socket (``/proc/net/tcp`` and ``/proc/PID/fd``, looked at twice a second).

Printed per run: the machine's load average; the first polls' spread (first poll of every feed,
from the earliest); skipped polls at the start (the first ``--warmup`` seconds) and in the
steady window (a gap between two polls of a feed longer than the interval plus ``--slack``
counts ``round(gap / interval) - 1`` skipped turns; a feed first polled later than the interval
plus slack after the earliest is one more); polls a second answered by the feed server (304s and
200s); for each instance its CPU as a percentage of one core over the steady window and over
the start (``/proc/PID/stat`` utime + stime), RSS now and at its peak, polls a second, and the
counts its ``/healthz`` says it holds; CPU-seconds per 1,000 polls in the window (all instances
together: less sensitive to the machine's load than a share of a core) and the database's
transactions and rows written per 1,000 polls (``pg_stat_database``); with several
instances, polls of one feed by two instances less than half an interval apart (0: each count
polled by one instance at a time); and, once the feeds stop changing, counts whose latest
stored tally is not the feed's (0).
``--profile FILE``: the instance runs under ``bench.profiled``, profiled over the steady window
only (``python -m pstats FILE``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from aiohttp import web
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.store import Database
from bot.store import tallies as tally_rows
from tests.cluster.fleet import (
    PYTHON_M,
    Instance,
    config_lines,
    fakes,
    make_fleet,
    start,
    stop_all,
)
from tests.conftest import PG_URL
from tests.delivery.crash_run import fresh_postgres, toml_value

TICK = os.sysconf("SC_CLK_TCK")


class Feeds:
    """``n`` JSON feeds with ETags; each request's time and instance, per feed."""

    def __init__(self, n: int) -> None:
        self.yes = [84] * n
        self.polls: list[list[tuple[float, int]]] = [[] for _ in range(n)]
        """Each feed's requests: when, and the client's port."""
        self.owners: dict[int, str] = {}
        """A client port to the instance whose socket it is."""
        self.status: Counter[int] = Counter()

    def body(self, i: int) -> tuple[bytes, str]:
        doc = {"yes": self.yes[i], "no": 201, "status": "counting"}
        return json.dumps(doc).encode(), f'"{i}-{self.yes[i]}"'

    async def handle(self, request: web.Request) -> web.Response:
        i = int(request.match_info["i"])
        peer = request.transport.get_extra_info("peername") if request.transport else None
        self.polls[i].append((time.monotonic(), peer[1] if peer else 0))
        body, etag = self.body(i)
        if request.headers.get("If-None-Match") == etag:
            self.status[304] += 1
            return web.Response(status=304, headers={"ETag": etag})
        self.status[200] += 1
        return web.Response(body=body, content_type="application/json", headers={"ETag": etag})

    async def churn(self, per_s: float) -> None:
        """Change ``per_s`` feeds a second, at random, until cancelled."""
        rng = random.Random(17)
        while True:
            await asyncio.sleep(1 / per_s)
            self.yes[rng.randrange(len(self.yes))] += 1

    def named(self, feed: list[tuple[float, int]]) -> list[tuple[float, str]]:
        return [(t, self.owners.get(port, "?")) for t, port in feed]

    async def watch(self, instances: list[Instance], server_port: int) -> None:
        """Learn which instance owns each connection to the feed server, until cancelled."""
        while True:
            inodes = client_ports(server_port)
            for i in instances:
                with contextlib.suppress(OSError):
                    for fd in os.listdir(f"/proc/{i.proc.pid}/fd"):
                        with contextlib.suppress(OSError):
                            link = os.readlink(f"/proc/{i.proc.pid}/fd/{fd}")
                            if link.startswith("socket:[") and int(link[8:-1]) in inodes:
                                self.owners[inodes[int(link[8:-1])]] = i.name
            await asyncio.sleep(0.5)


async def lag(probes: dict[str, list[tuple[float, float]]], instances: list[Instance]) -> None:
    """Until cancelled, twice a second: how late this process's loop wakes up (``bench``) and
    how long each instance takes to answer ``/healthz`` (its loop's lag, roughly)."""
    loop = asyncio.get_running_loop()
    async with aiohttp.ClientSession() as http:
        while True:
            asked = loop.time()
            await asyncio.sleep(0.5)
            probes.setdefault("bench", []).append((asked, loop.time() - asked - 0.5))
            for i in instances:
                if i.url:
                    t = loop.time()
                    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                        async with asyncio.timeout(30):
                            await i.healthz(http)
                    probes.setdefault(i.name, []).append((t, loop.time() - t))


def client_ports(server_port: int) -> dict[int, int]:
    """The sockets connected to ``server_port``: inode to local port."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for row in Path(table).read_text().splitlines()[1:]:
                f = row.split()
                if int(f[2].rsplit(":", 1)[1], 16) == server_port:
                    out[int(f[9])] = int(f[1].rsplit(":", 1)[1], 16)
    return out


@contextlib.asynccontextmanager
async def serve(feeds: Feeds) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_get("/f/{i}.json", feeds.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0, backlog=4096).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def count_id(i: int) -> str:
    return f"feed-{i:04d}"


def counts_toml(n: int, interval: float, base: str) -> list[str]:
    lines = []
    for i in range(n):
        url = toml_value(f"{base}/f/{i}.json")
        lines += [
            "[[counts]]",
            f'id = "{count_id(i)}"\ntitle = "Polled count {i}"\ninterval = {interval}',
            'choices = [{id = "yes", label = "Yes"}, {id = "no", label = "No"}]',
            f'source = {{kind = "http_json", url = {url}, fields = {{state = "status"}}}}',
        ]
    return lines


def cpu_seconds(instance: Instance) -> float:
    """The process's user + system CPU time so far."""
    fields = Path(f"/proc/{instance.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def skipped(times: list[float], interval: float, slack: float, start: float, end: float) -> int:
    """Turns missed between ``start`` and ``end`` by a feed polled at ``times``."""
    inside = [t for t in times if start <= t < end]
    missed = 0
    for a, b in itertools.pairwise(inside):
        if b - a > interval + slack:
            missed += max(1, round((b - a) / interval) - 1)
    return missed


def overlaps(polls: list[tuple[float, str]], interval: float) -> int:
    """Consecutive polls of one feed by two instances less than half an interval apart."""
    return sum(
        1 for (ta, a), (tb, b) in itertools.pairwise(polls) if a != b and tb - ta < interval / 2
    )


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


async def run(args: argparse.Namespace, n: int) -> list[str]:
    interval: float = args.interval
    feeds = Feeds(args.counts)
    d, s = fakes(1)
    out = [f"## {n} instance(s), {args.counts:,} counts every {interval:g} s ({load()})"]
    async with d, s, serve(feeds) as base, fresh_postgres(args.postgres) as url:
        fleet = make_fleet(d, s, url, 0, 0)
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            config = Path(tmp) / "tallybot.toml"
            lines = config_lines(url, fleet.guild, d, s, 1)
            config.write_text("\n".join(lines + counts_toml(args.counts, interval, base)) + "\n")
            churn = asyncio.create_task(feeds.churn(args.changes))
            watch = asyncio.create_task(feeds.watch(fleet.instances, int(base.rsplit(":", 1)[1])))
            probes: dict[str, list[tuple[float, float]]] = {}
            lagging = asyncio.create_task(lag(probes, fleet.instances))
            began = time.monotonic()
            command = PYTHON_M
            if args.profile is not None:
                os.environ["TALLYBOT_BENCH_PROFILE"] = args.profile  # run in this folder
                command = (sys.executable, "-m", "bench.profiled")
            try:
                await start(fleet, config, Path(tmp), n, limit=300, command=command)
                ready = time.monotonic() - began
                polled = [f[0][0] for f in feeds.polls if f]
                first = min(polled) if polled else time.monotonic()
                w0 = max(time.monotonic(), first + args.warmup)
                await asyncio.sleep(w0 - time.monotonic())
                cpu0 = {i.name: cpu_seconds(i) for i in fleet.instances}
                signal_all(fleet.instances, signal.SIGUSR1, args.profile)
                store0 = await store_work(args.postgres, url)
                await asyncio.sleep(args.window)
                w1 = time.monotonic()
                cpu1 = {i.name: cpu_seconds(i) for i in fleet.instances}
                signal_all(fleet.instances, signal.SIGUSR2, args.profile)
                store1 = await store_work(args.postgres, url)
                rss = {i.name: (i.rss_now(), i.rss()) for i in fleet.instances}
                async with aiohttp.ClientSession() as http:
                    held = {i.name: (await i.healthz(http))["instance"] for i in fleet.instances}
                out.append(f"window {w1 - w0:.0f} s from {w0 - began:.0f} s ({load()})")
                churn.cancel()
                await asyncio.sleep(2 * interval + args.slack + 1)
                stale = await behind(url, feeds)
            finally:
                churn.cancel()
                watch.cancel()
                lagging.cancel()
                await stop_all(fleet)
            if args.logs is not None:
                for i in fleet.instances:
                    shutil.copy(i.log, Path(args.logs) / f"{n}-{i.name}.log")
        out += figures(args, feeds, fleet.instances, began, first, (w0, w1), (cpu0, cpu1), rss)
        out.append(per_poll(feeds, (w0, w1), (cpu0, cpu1), (store0, store1)))
        if args.dump is not None:
            times = [[(t - first, name) for t, name in feeds.named(f)] for f in feeds.polls]
            dump(args.dump, {"window": [w0 - first, w1 - first], "polls": times})
        out.append(f"ready after {ready:.1f} s")
        for name, seen in probes.items():
            start_lag = max((x for t, x in seen if t < w0), default=0.0)
            steady_lag = max((x for t, x in seen if w0 <= t < w1), default=0.0)
            what = "loop late" if name == "bench" else "/healthz took"
            out.append(
                f"  {name}: {what} at most {start_lag:.2f} s at start, {steady_lag:.2f} s steady"
            )
        for name, holds in held.items():
            assert isinstance(holds, dict)
            out.append(f"  {name} holds {holds['counts']} counts (/healthz)")
        held_in_all = sum(int(str(h["counts"])) for h in held.values() if isinstance(h, dict))
        # /healthz counts the counts, never names them (a count's id may be a place's)
        out.append(f"counts held in all (/healthz; more than --counts: some twice): {held_in_all}")
        out.append(f"counts whose latest stored tally is not the feed's: {stale}")
    return out


def signal_all(instances: list[Instance], signum: int, profile: str | None) -> None:
    """With ``--profile``: start (SIGUSR1) or stop and write (SIGUSR2) the instances'
    profiles (``bench.profiled``)."""
    if profile is not None:
        for i in instances:
            i.proc.send_signal(signum)


async def store_work(server: str, url: str) -> tuple[int, int]:
    """The run's database's transactions and rows written so far (``pg_stat_database``, read
    from the server's own database: each backend reports its figures within a second or so of
    a transaction's end, so the window is read a second late at both ends)."""
    await asyncio.sleep(1.1)
    engine = create_async_engine(server, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            row = (
                await conn.execute(
                    text(
                        "SELECT xact_commit + xact_rollback, "
                        "tup_inserted + tup_updated + tup_deleted "
                        "FROM pg_stat_database WHERE datname = :name"
                    ),
                    {"name": url.rsplit("/", 1)[1]},
                )
            ).one()
    finally:
        await engine.dispose()
    return int(row[0]), int(row[1])


def per_poll(
    feeds: Feeds,
    window: tuple[float, float],
    cpu: tuple[dict[str, float], dict[str, float]],
    store: tuple[tuple[int, int], tuple[int, int]],
) -> str:
    """CPU-seconds per 1,000 polls (all instances together, less sensitive to the machine's
    load than a share of a core) and the store's transactions and rows written per poll."""
    w0, w1 = window
    polls = sum(1 for f in feeds.polls for t, _ in f if w0 <= t < w1) or 1
    cpu_s = sum(cpu[1].values()) - sum(cpu[0].values())
    xacts, rows = (b - a for a, b in zip(store[0], store[1], strict=True))
    return (
        f"per 1,000 polls in the window: {1000 * cpu_s / polls:.2f} CPU-seconds, "
        f"{1000 * xacts / polls:.0f} store transactions, {1000 * rows / polls:.0f} rows written "
        f"({polls:,} polls)"
    )


def dump(path: str, data: object) -> None:
    Path(path).write_text(json.dumps(data))


def figures(
    args: argparse.Namespace,
    feeds: Feeds,
    instances: list[Instance],
    began: float,
    first: float,
    window: tuple[float, float],
    cpu: tuple[dict[str, float], dict[str, float]],
    rss: dict[str, tuple[int, int]],
) -> list[str]:
    interval, slack = args.interval, args.slack
    w0, w1 = window
    firsts = sorted(f[0][0] - first for f in feeds.polls if f)
    late = sum(1 for t in firsts if t > interval + slack)
    never = sum(1 for f in feeds.polls if not f)
    times = [[t for t, _ in f] for f in feeds.polls]
    at_start = sum(skipped(t, interval, slack, first, w0) for t in times) + late + never
    steady = sum(skipped(t, interval, slack, w0, w1) for t in times)
    named = [[p for p in feeds.named(f) if w0 <= p[0] < w1] for f in feeds.polls]
    per_instance = Counter(name for f in named for _, name in f)
    inside = sum(len(f) for f in named)
    double = sum(overlaps(f, interval) for f in named)
    span = w1 - w0
    mid = firsts[len(firsts) // 2] if firsts else 0.0
    lines = [
        f"first polls: {len(firsts):,} feeds over {firsts[-1] if firsts else 0:.2f} s "
        f"(median {mid:.2f} s; {late} later than {interval + slack:g} s, {never} never)",
        f"skipped polls: at start {at_start}, steady {steady}",
        f"feed server: {inside / span:.0f} polls/s in the window "
        f"(ideal {args.counts / interval:.0f}); answers so far {dict(feeds.status)}, "
        f"from no known instance {per_instance['?']}",
        f"polls of one feed by two instances < {interval / 2:g} s apart (window): {double}",
        "| instance | CPU steady (% of a core) | CPU start | RSS now | RSS peak | polls/s |",
        "|---|---|---|---|---|---|",
    ]
    for i in instances:
        steady_cpu = 100 * (cpu[1][i.name] - cpu[0][i.name]) / span
        start_cpu = 100 * cpu[0][i.name] / (w0 - began)
        now, peak = rss[i.name]
        lines.append(
            f"| {i.name} | {steady_cpu:.1f}% | {start_cpu:.1f}% | {now // 1024} MB | "
            f"{peak // 1024} MB | {per_instance[i.name] / span:.0f} |"
        )
    return lines


async def behind(url: str, feeds: Feeds) -> int:
    """Counts whose latest stored tally is not what their feed says now."""
    stale = 0
    async with Database(url) as db, db.connect() as conn:
        for i, yes in enumerate(feeds.yes):
            last = await tally_rows.last(conn, count_id(i))
            if last is None or last.votes.get("yes") != yes:
                stale += 1
    return stale


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, default=1000)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--changes", type=float, default=3.0, help="feeds changed a second")
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--warmup", type=float, default=20.0, help="seconds of start")
    parser.add_argument("--window", type=float, default=30.0, help="seconds of steady state")
    parser.add_argument("--slack", type=float, default=1.0)
    parser.add_argument("--postgres", default=PG_URL)
    parser.add_argument("--dump", default=None, help="a file for every poll's time (JSON)")
    parser.add_argument("--logs", default=None, help="a folder to keep the instances' logs in")
    parser.add_argument(
        "--profile",
        default=None,
        help="a file for the steady window's cProfile statistics (bench.profiled; one instance)",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for n in args.instances:
        for line in await run(args, n):
            print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
