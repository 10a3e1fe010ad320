"""Live viewers of the public page: N open Server-Sent Events streams on loopback, a tally
accepted, and how long until the last viewer has it; chat deliveries timed meanwhile.

    python -m bench.web_sse [--viewers 1000,5000,10000] [--tallies 5] [--clients 2]

Each scenario runs in its own process: the bot (a SQLite store, the public pages on 127.0.0.1,
20 chat channels subscribed to every update on a recording adapter that notes when each post
is made) and, in ``--clients`` processes of their own, the viewers (``bench/sse_viewers.py``:
bare asyncio protocols, so that the viewers' CPU is not what is measured). For each tally: the
time from the tally accepted (its pipeline call returned) to each viewer receiving its event
(p50, p99, max over every viewer and tally), and to each chat post (p50, max), first with no
viewers, then with all of them connected. "worded" is from accepted to the event read from the
store and encoded; "written" is the bot's part: from accepted to the event written into every
viewer's connection (the rest is the kernel and the viewers, on the same two cores). RSS is the
bot's process alone: before the viewers connect and once they all have, as MB added per 1,000
viewers. ``--trace N``: where the viewers' memory went (tracemalloc, N frames, on stderr).
Times are CLOCK_MONOTONIC, the same in every process.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.sse_viewers import raise_fd_limit
from bot.commands.request import Request
from bot.delivery.adapter import Earlier
from bot.delivery.pacing import Pace, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.domain.model import Tally
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.testing.adapter import RecordingAdapter

COUNT_ID = "bessemer-2021"
COUNT = {
    "id": COUNT_ID,
    "title": "Amazon BHM1 union election, Bessemer AL",
    "tie_holder": "no",
    "received": 3215,
    "public": True,
    "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
    "source": {"kind": "manual"},
}
CHAT_CHANNELS = 20
WAIT = 30.0
"""Seconds to wait for every viewer to have a tally before giving up on the ones that lack it."""


@dataclass
class Row:
    viewers: int
    connected: int
    viewer_p50_ms: float
    viewer_p99_ms: float
    viewer_max_ms: float
    missed: int
    worded_p50_ms: float
    """Tally accepted to its event read from the store and encoded."""
    written_p50_ms: float
    """Tally accepted to the bot having written it to every viewer's connection."""
    written_max_ms: float
    rss_added_mb_per_1000: float
    chat_p50_ms_alone: float
    chat_max_ms_alone: float
    chat_p50_ms_viewed: float
    chat_max_ms_viewed: float
    dropped: int


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


class TimedAdapter(RecordingAdapter):
    """Chat: records when each post is made."""

    def __init__(self) -> None:
        super().__init__("console")
        self.times: list[float] = []
        self.want = 0
        self.enough = asyncio.Event()

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        self.times.append(time.monotonic())
        if len(self.times) >= self.want:
            self.enough.set()
        return await super().post(
            channel, content, key=key, pace=pace, attachment=attachment, earlier=earlier
        )


# -- the bot (a process of its own per scenario) ------------------------------------------------


def show_allocations(snapshot: tracemalloc.Snapshot, n: int) -> None:
    """Where the memory the viewers hold was allocated: bytes per viewer, by line (stderr)."""
    for stat in snapshot.statistics("traceback")[:25]:
        frames = " <- ".join(
            f"{Path(f.filename).parent.name}/{Path(f.filename).name}:{f.lineno}"
            for f in stat.traceback
        )
        print(
            f"{stat.size / n:8.0f} B/viewer {stat.count / n:6.2f} blocks  {frames}", file=sys.stderr
        )
    total = sum(s.size for s in snapshot.statistics("filename"))
    print(f"{total / n:8.0f} B/viewer traced in all", file=sys.stderr)


async def scenario(n: int, tallies: int, clients: int, trace: int = 0) -> Row:
    raise_fd_limit()
    with tempfile.TemporaryDirectory() as tmp:
        raw: dict[str, Any] = {
            "store": {"url": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"},
            "web": {"port": 0, "streams_per_ip": n + 10, "max_streams": n + 10},
            "counts": [COUNT],
        }
        adapter = TimedAdapter()
        app = App(parse(raw, Path(tmp) / "bench.toml"), {Platform("console"): lambda c: adapter})
        async with app:
            for i in range(CHAT_CHANNELS):
                ref = ChannelRef(Platform("console"), "bench", f"c{i}")
                await app.commands.handle(Request(ref, f"b{i}", "b", f"subscribe {COUNT_ID} all"))
            seq = 0
            alone: list[float] = []
            for _ in range(tallies):  # chat with nobody watching
                seq += 1
                alone += await chat_only(app, adapter, seq)
            assert app.web is not None
            gc.collect()
            before = rss_mb()
            if trace:
                tracemalloc.start(trace)
            url = f"{app.web.url}/c/{COUNT_ID}/events"
            per = [n // clients + (1 if i < n % clients else 0) for i in range(clients)]
            procs = []
            for k in per:
                argv = ["-m", "bench.sse_viewers", url, str(k), str(seq)]
                procs.append(
                    await asyncio.create_subprocess_exec(
                        sys.executable,
                        *argv,
                        str(tallies),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        limit=2**26,
                    )
                )
            connected = 0
            for proc in procs:
                assert proc.stdout is not None
                line = (await proc.stdout.readline()).decode().split()
                connected += int(line[1])
            broadcaster = app.web.broadcaster
            await broadcaster.until(lambda: broadcaster.viewers >= connected)
            written: dict[int, float] = {}
            post = broadcaster.post

            async def timed_post(count_id: str, seq: int, data: bytes) -> None:
                await post(count_id, seq, data)
                if seq:
                    written[seq] = time.monotonic()

            broadcaster.post = timed_post  # type: ignore[method-assign]
            worded: dict[int, float] = {}
            event_for = broadcaster.event_for

            async def timed_event(count_id: str, seq: int) -> bytes | None:
                data = await event_for(count_id, seq)
                worded[seq] = time.monotonic()
                return data

            broadcaster.event_for = timed_event
            gc.collect()
            after = rss_mb()
            if trace:
                show_allocations(tracemalloc.take_snapshot(), n)
                tracemalloc.stop()
            accepted: dict[int, float] = {}
            viewed: list[float] = []
            for _ in range(tallies):
                seq += 1
                viewed += await chat_only(app, adapter, seq, accepted)
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(WAIT):
                        for proc in procs:
                            await line_starting(proc, f"got {seq}")
            latencies: list[float] = []
            received = 0
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.close()
            for proc in procs:
                times = json.loads(await line_starting(proc, "{"))
                await proc.wait()
                for key, ts in times.items():
                    if int(key) in accepted:
                        latencies += [t - accepted[int(key)] for t in ts]
                        received += len(ts)
            return Row(
                n,
                connected,
                pct(latencies, 0.5) * 1000,
                pct(latencies, 0.99) * 1000,
                max(latencies, default=float("nan")) * 1000,
                connected * tallies - received,
                pct([worded[s] - at for s, at in accepted.items() if s in worded], 0.5) * 1000,
                pct([written[s] - at for s, at in accepted.items() if s in written], 0.5) * 1000,
                max(written[s] - at for s, at in accepted.items() if s in written) * 1000,
                (after - before) / (n / 1000),
                statistics.median(alone) * 1000,
                max(alone) * 1000,
                statistics.median(viewed) * 1000,
                max(viewed) * 1000,
                app.web.broadcaster.dropped,
            )


async def line_starting(proc: asyncio.subprocess.Process, start: str) -> str:
    """The next line of the viewers' output that starts with ``start``."""
    assert proc.stdout is not None
    while True:
        line = (await proc.stdout.readline()).decode()
        if not line:
            raise EOFError("the viewers' process ended")
        if line.startswith(start):
            return line


async def chat_only(
    app: App, adapter: TimedAdapter, seq: int, accepted: dict[int, float] | None = None
) -> list[float]:
    """Accept tally ``seq`` and wait for its chat posts; their latencies."""
    first = len(adapter.times)
    adapter.want = first + CHAT_CHANNELS
    adapter.enough.clear()
    tally = Tally(COUNT_ID, {"yes": 10 * seq, "no": 20 * seq}, datetime.now(UTC), "bench")
    result = await app.pipeline.ingest(tally)
    at = time.monotonic()
    assert result.accepted, result
    assert result.tally.seq == seq, result
    if accepted is not None:
        accepted[seq] = at
    await asyncio.wait_for(adapter.enough.wait(), WAIT)
    await asyncio.sleep(0.5)  # a breath between tallies
    return [t - at for t in adapter.times[first : first + CHAT_CHANNELS]]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", default="1000,5000,10000")
    parser.add_argument("--tallies", type=int, default=5)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument(
        "--trace", type=int, default=0, help="frames: where the viewers' memory goes (stderr)"
    )
    parser.add_argument("--scenario", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.scenario:
        row = asyncio.run(scenario(args.scenario, args.tallies, args.clients, args.trace))
        print(json.dumps(asdict(row)))
        return
    print(
        f"{'viewers':>8} {'conn':>6} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} {'missed':>6} "
        f"{'worded':>7} {'written p50/max':>16} "
        f"{'MB/1000':>8} {'chat p50/max alone':>19} {'chat p50/max viewed':>20} {'dropped':>7}"
    )
    for n in (int(v) for v in args.viewers.split(",")):
        cmd = [sys.executable, "-m", "bench.web_sse", "--scenario", str(n)]
        cmd += ["--tallies", str(args.tallies), "--clients", str(args.clients)]
        cmd += ["--trace", str(args.trace)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if args.trace:
            print(out.stderr, end="")
        if out.returncode != 0:
            print(f"{n:>8} failed: {out.stderr.strip().splitlines()[-1:]}")
            continue
        r = Row(**json.loads(out.stdout.strip().splitlines()[-1]))
        print(
            f"{r.viewers:>8} {r.connected:>6} {r.viewer_p50_ms:>8.1f} {r.viewer_p99_ms:>8.1f} "
            f"{r.viewer_max_ms:>8.1f} {r.missed:>6} "
            f"{r.worded_p50_ms:>7.1f} {r.written_p50_ms:>7.1f}/{r.written_max_ms:<8.1f} "
            f"{r.rss_added_mb_per_1000:>8.2f} "
            f"{r.chat_p50_ms_alone:>9.1f}/{r.chat_max_ms_alone:<9.1f} "
            f"{r.chat_p50_ms_viewed:>10.1f}/{r.chat_max_ms_viewed:<9.1f} {r.dropped:>7}"
        )


if __name__ == "__main__":
    main()
