"""Latency: a tally accepted -> the first subscribed channel posted, with nothing queued.

Runs the real pipeline and dispatcher on a SQLite file store; the adapter records the time of
each post. Prints p50, p99 and max over many updates.

    python -m bench.latency [--updates 500] [--channels 10]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bot.commands.request import Request
from bot.delivery.adapter import Earlier
from bot.delivery.pacing import Pace, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.domain.model import Tally
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.testing.adapter import RecordingAdapter
from tests.helpers import T0


class TimedAdapter(RecordingAdapter):
    def __init__(self) -> None:
        super().__init__(Platform("console"))
        self.first_post: asyncio.Event = asyncio.Event()
        self.at = 0.0

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
        if not self.first_post.is_set():
            self.at = time.perf_counter()
            self.first_post.set()
        return await super().post(
            channel, content, key=key, pace=pace, attachment=attachment, earlier=earlier
        )


async def main(updates: int, channels: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cfg = parse(
            {
                "store": {"url": f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"},
                "counts": [
                    {
                        "id": "bench",
                        "title": "Latency bench",
                        "received": 10_000_000,
                        "choices": [{"id": "yes"}, {"id": "no"}],
                        "source": {"kind": "manual"},
                    }
                ],
            },
            Path(tmp) / "bench.toml",
        )
        adapter = TimedAdapter()
        async with App(cfg, {Platform("console"): lambda c: adapter}, poll=False) as app:
            for i in range(channels):
                ch = ChannelRef(Platform("console"), "local", f"c{i}")
                await app.commands.handle(Request(ch, "u", "u", "subscribe bench all", home=True))
            samples = []
            for i in range(1, updates + 1):
                adapter.first_post.clear()
                start = time.perf_counter()
                await app.pipeline.ingest(Tally("bench", {"yes": i, "no": 2 * i}, T0, "bench"))
                await asyncio.wait_for(adapter.first_post.wait(), timeout=10)
                samples.append((adapter.at - start) * 1000)
                await app.idle()
    samples.sort()
    p50 = statistics.median(samples)
    p99 = samples[int(len(samples) * 0.99) - 1]
    print(f"latency accepted->first post, {updates} updates, {channels} channels (SQLite file):")
    print(f"  p50 {p50:.2f} ms   p99 {p99:.2f} ms   max {samples[-1]:.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--updates", type=int, default=500)
    parser.add_argument("--channels", type=int, default=10)
    args = parser.parse_args()
    asyncio.run(main(args.updates, args.channels))
