"""Slash commands answered while one instance fans a final out to thousands of Discord channels.

    python -m bench.commands [--channels 2000] [--rate 4] [--users 40] [--postgres URL]

One real ``tallybot run`` process (``tests/cluster/fleet.py``) on a fresh PostgreSQL database,
with the Discord fake at Discord's real limits (50 requests a second for the bot) served by this
process. ``--channels`` channels are subscribed to the count; its final (with its chart) is
stored, and while the bot sends it to every channel, this process sends ``/count status`` and
``/count list`` interactions over the fake's gateway, ``--rate`` a second, from ``--users``
members in turn (so that no one reaches the per-person command limit) in 10 channels of their
own. The same is done for ``--idle`` seconds before the final, for comparison.

Printed, with the load average: for the commands sent before and during the fan-out, from the
interaction sent to its first callback (the acknowledgement or the answer) received by the
fake: p50, p99 and max, how many were acknowledged and how many not at all (within 10 s), and
how many callbacks Discord refused; and to the answer shown (the callback's message, or the
deferred reply edited in); the fan-out's seconds, channels reached and 429s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path

from bot.base.clock import SystemClock
from bot.domain.model import TallyState
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from tests.cluster.fleet import (
    Fleet,
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
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.interaction import FakeInteraction
from tests.helpers import tally

FINAL = tally(1300, 1915, received=3215, state=TallyState.FINAL)
COMMANDS: tuple[tuple[str, list[dict[str, object]]], ...] = (
    ("status", [{"name": "count", "value": "bessemer-2021"}]),
    ("list", []),
)


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


class Asker:
    """Sends commands at a steady rate from members in turn, keeping every interaction."""

    def __init__(self, d: FakeDiscord, guild: int, users: int) -> None:
        self.d = d
        self.guild = guild
        self.users = [d.add_user(f"member-{i}") for i in range(users)]
        for i, uid in enumerate(self.users):
            d.add_member(guild, uid, f"member-{i}")
        self.channels = [d.add_channel(guild, f"commands-{i}") for i in range(10)]
        self.sent: list[FakeInteraction] = []

    async def ask(self, rate: float, until: asyncio.Event) -> list[FakeInteraction]:
        mine: list[FakeInteraction] = []
        loop = asyncio.get_running_loop()
        next_at = loop.time()
        while not until.is_set():
            k = len(self.sent)
            name, options = COMMANDS[k % len(COMMANDS)]
            ix = await self.d.inject_slash_command(
                self.guild,
                self.channels[k % len(self.channels)],
                self.users[k % len(self.users)],
                "count",
                options,
                subcommand=name,
            )
            self.sent.append(ix)
            mine.append(ix)
            next_at += 1 / rate
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        return mine


async def answered(d: FakeDiscord, sent: list[FakeInteraction], within: float) -> None:
    """Wait until every interaction has a callback, at most ``within`` seconds."""
    with contextlib.suppress(TimeoutError):
        await d.wait_for(lambda: all(ix.callbacks for ix in sent), timeout=within)


def answer_ms(d: FakeDiscord, ix: FakeInteraction) -> float | None:
    """From the interaction sent to its answer shown: the message of a type 4 callback, or the
    deferral's @original edited with the answer."""
    original = ix.original
    if original is None:
        return None
    shown = original.edited_at if original.edited_at is not None else original.created_at
    return (shown - (d.wall_time() - (d.clock() - ix.injected_at))) * 1000


def percentiles(took: list[float]) -> str:
    if not took:
        return "- | - | -"
    took = sorted(took)
    p99 = took[min(len(took) - 1, int(len(took) * 0.99))]
    return f"{took[len(took) // 2]:.0f} | {p99:.0f} | {took[-1]:.0f}"


def summary(d: FakeDiscord, what: str, sent: list[FakeInteraction]) -> str:
    acks = [(ix.callbacks[0].time - ix.injected_at) * 1000 for ix in sent if ix.callbacks]
    answers = [a for a in (answer_ms(d, ix) for ix in sent) if a is not None]
    acked = sum(1 for ix in sent if ix.response is not None)
    refused = sum(1 for ix in sent for c in ix.callbacks if c.status >= 300)
    return (
        f"| {what} | {len(sent)} | {acked} | {len(sent) - len(acks)} | {percentiles(acks)} | "
        f"{refused} | {len(answers)} | {percentiles(answers)} |"
    )


async def run(args: argparse.Namespace) -> list[str]:
    d, s = fakes(1)
    out = [f"{args.channels:,} Discord channels, commands {args.rate:g}/s ({load()})"]
    async with d, s, serve_feed() as (_, feed_url), fresh_postgres(args.postgres) as url:
        fleet: Fleet = make_fleet(d, s, url, args.channels, 0)
        asker = Asker(d, fleet.guild, args.users)
        with tempfile.TemporaryDirectory(prefix="tallybot-bench-") as tmp:
            config = Path(tmp) / "tallybot.toml"
            write_config(config, url, fleet.guild, d, s, 1, feed_url)
            await subscribe_all(fleet)
            try:
                fleet.db = await Database(url).__aenter__()
                await start(fleet, config, Path(tmp), 1, limit=120)
                await d.wait_for(lambda: bool(d.registered_commands), timeout=30)
                idle_done = asyncio.Event()
                idle = asyncio.create_task(asker.ask(args.rate, idle_done))
                await asyncio.sleep(args.idle)
                idle_done.set()
                before = await idle
                await answered(d, before, 10)
                out.append(f"fan-out starts ({load()})")
                done = asyncio.Event()
                during = asyncio.create_task(asker.ask(args.rate, done))
                began = time.monotonic()
                ingested = await Pipeline(fleet.store(), SystemClock()).ingest(FINAL)
                if not ingested.accepted:
                    raise AssertionError(f"the final was not accepted: {ingested.detection}")
                deadline = began + args.channels / 50 * 3 + 60
                # Counting every channel's messages is slow: twice a second, not at every post.
                while fleet.on_d() < args.channels and time.monotonic() < deadline:  # noqa: ASYNC110
                    await asyncio.sleep(0.5)
                took = time.monotonic() - began
                done.set()
                sent = await during
                await answered(d, sent, 10)
                out.append(f"fan-out over ({load()})")
                peak = fleet.instances[0].rss() // 1024
            finally:
                await stop_all(fleet)
                if fleet.db is not None:
                    await fleet.db.aclose()
        ideal = (args.channels - 1) / 50
        out += [
            f"fan-out: {fleet.on_d():,} of {args.channels:,} channels in {took:.1f} s "
            f"(ideal {ideal:.1f} s, {took / ideal:.2f}x), 429s {d.count_429}, peak RSS {peak} MB",
            "| commands | sent | acknowledged | no callback | ack p50 ms | p99 | max | refused "
            "| answered | answer p50 ms | p99 | max |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            summary(d, "before the final", before),
            summary(d, "during the fan-out", sent),
        ]
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--channels", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=4.0, help="commands a second")
    parser.add_argument("--users", type=int, default=40)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of commands before")
    parser.add_argument("--postgres", default=PG_URL)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    for line in await run(args):
        print(line, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
