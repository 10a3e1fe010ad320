"""Telegram exactly once, measured: a real bot process fanning one update out to 100 groups on the
Telegram fake (its real limits: about 30 messages/s overall, 1/s per chat with bursts of 3,
20/min per group).

    python -m bench.telegram [--groups 100] [--kills 20] [--only latency|kills]

``latency``: the fan-out with no fault, then with one lost answer (the first sendMessage is
carried out and its connection dropped). Printed: the other groups' latency (seconds from the
fan-out's first request to their post; p50 and max) in both runs and the worst difference, and
the repair's duration (the faulty group's first request to its last). ``kills``: the bot is
killed with SIGKILL once ``k`` groups have their post, at ``--kills`` points spread over the
fan-out (the first at its first request), and started again on the same store until every group
has it. Printed per run and in total: groups with no copy (lost), with two or more (doubled),
and whose only copy is silent (silent-only: members never notified), and the restart's seconds.

The bot runs as ``python -m bot run`` on a fresh SQLite store per run; the fake runs here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.base.clock import SystemClock
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from tests.delivery.crash_run import start_bot, stop, toml_value
from tests.fakes.telegram_fake import Chat, FakeTelegram
from tests.helpers import bessemer, tally

POSTS = ("sendMessage", "sendPhoto")


@dataclass
class Run:
    fake: FakeTelegram
    groups: list[Chat]
    config: Path
    env: dict[str, str]
    log: Path

    def posted(self, group: Chat) -> list[int]:
        """The bot's visible posts in ``group`` (ids)."""
        return [m.message_id for m in self.fake.visible(group) if m.source in POSTS]

    def served(self) -> int:
        return sum(1 for g in self.groups if self.posted(g))

    async def until(self, check: Callable[[], bool], limit: float) -> None:
        async with asyncio.timeout(limit):
            while not check():
                with contextlib.suppress(TimeoutError):
                    await self.fake.wait_for(check, timeout=limit)


async def prepare(fake: FakeTelegram, tmp: Path, groups: int) -> Run:
    chats = [fake.add_group(f"Union hall {i}") for i in range(groups)]
    store = f"sqlite+aiosqlite:///{tmp / 'tallybot.sqlite3'}"
    lines = [
        f"[store]\nurl = {toml_value(store)}",
        # A restart is a new instance: it takes over the dead one's deliveries once their
        # claim expires (as in tests/delivery/crash_run.py).
        "[cluster]\nclaim_seconds = 3",
        f"[telegram]\napi_base = {toml_value(fake.base_url)}",
        "[[counts]]",
        'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'tie_holder = "no"\nreceived = 3215',
        'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
        'source = {kind = "manual"}',
    ]
    config = tmp / "tallybot.toml"
    config.write_text("\n".join(lines) + "\n")
    clock = SystemClock()
    async with Database(store) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, bessemer())
            for chat in chats:
                ref = ChannelRef(Platform("telegram"), str(chat.id), str(chat.id))
                await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", Mode.EVENTS, by="bench", at=clock.now()
                )
        result = await Pipeline(db, clock).ingest(tally(84, 201))
        assert result.message is not None
        assert result.message.significant
    env = {
        **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
        "TELEGRAM_BOT_TOKEN": fake.token,
    }
    return Run(fake, chats, config, env, tmp / "bot.log")


# ------------------------------------------------------------------ latency


@dataclass
class Latency:
    others: list[float]
    faulty: int | None
    repair: float | None


async def fan_out(groups: int, *, lose: bool) -> Latency:
    async with FakeTelegram() as fake:
        with tempfile.TemporaryDirectory() as tmp:
            run = await prepare(fake, Path(tmp), groups)
            if lose:
                fake.lose_answer("sendMessage")
            bot = await start_bot(run.config, run.env, run.log)
            try:
                await run.until(lambda: run.served() == groups, 600)
                await asyncio.sleep(2)  # a repair's deletes, if any, land
            finally:
                await stop(bot, signal.SIGTERM)
    posts = [r for r in fake.requests if r.method in POSTS]
    start = min(r.time for r in posts)
    lost = [r for r in posts if r.lost]
    faulty = int(lost[0].args["chat_id"]) if lost else None
    arrived: dict[int, float] = {}
    for r in posts:
        chat = int(r.args["chat_id"])
        if r.ok and r.executed:
            arrived.setdefault(chat, r.time - start)
    repair = None
    if faulty is not None:
        mine = [r.time for r in fake.requests if str(r.args.get("chat_id")) == str(faulty)]
        repair = max(mine) - min(mine)
    others = [t for chat, t in arrived.items() if chat != faulty]
    return Latency(others, faulty, repair)


def quantiles(xs: list[float]) -> str:
    return f"p50 {statistics.median(xs):.2f} s, max {max(xs):.2f} s"


async def latency(groups: int) -> None:
    clean = await fan_out(groups, lose=False)
    faulty = await fan_out(groups, lose=True)
    print(f"no fault: {len(clean.others)} groups, {quantiles(clean.others)}", flush=True)
    print(
        f"one lost answer: the other {len(faulty.others)} groups {quantiles(faulty.others)}; "
        f"the repair took {faulty.repair:.2f} s",
        flush=True,
    )
    clean_sorted, faulty_sorted = sorted(clean.others), sorted(faulty.others)
    n = min(len(clean_sorted), len(faulty_sorted))
    worst = max(faulty_sorted[i] - clean_sorted[i] for i in range(n))
    print(f"worst difference at equal rank: {worst:+.2f} s", flush=True)


# ------------------------------------------------------------------ kills


@dataclass
class Killed:
    at: int
    lost: int
    doubled: int
    silent_only: int
    seconds: float


async def kill_once(groups: int, kill_at: int) -> Killed:
    async with FakeTelegram() as fake:
        with tempfile.TemporaryDirectory() as tmp:
            run = await prepare(fake, Path(tmp), groups)
            began = time.monotonic()
            first = await start_bot(run.config, run.env, run.log)
            try:
                if kill_at == 0:
                    await run.until(lambda: bool(fake.calls_to("sendMessage")), 120)
                else:
                    await run.until(lambda: run.served() >= kill_at, 600)
            finally:
                await stop(first, signal.SIGKILL)
            killed = run.served()
            second = await start_bot(run.config, run.env, run.log)
            try:
                await run.until(lambda: run.served() == groups, 600)
                await asyncio.sleep(3)  # a repair's deletes land
            finally:
                await stop(second, signal.SIGTERM)
            seconds = time.monotonic() - began
    copies = [run.posted(g) for g in run.groups]
    silent_only = 0
    for group, ids in zip(run.groups, copies, strict=True):
        if len(ids) == 1 and group.messages[ids[0]].disable_notification:
            silent_only += 1
    return Killed(
        at=killed,
        lost=sum(1 for c in copies if not c),
        doubled=sum(1 for c in copies if len(c) > 1),
        silent_only=silent_only,
        seconds=seconds,
    )


async def kills(groups: int, points: int) -> None:
    totals = [0, 0, 0]
    for i in range(points):
        kill_at = i * groups // points
        k = await kill_once(groups, kill_at)
        totals = [totals[0] + k.lost, totals[1] + k.doubled, totals[2] + k.silent_only]
        print(
            f"kill at {kill_at:>3} (served {k.at:>3}): lost {k.lost}, doubled {k.doubled}, "
            f"silent-only {k.silent_only}, {k.seconds:.1f} s",
            flush=True,
        )
    print(
        f"{points} kills: lost {totals[0]}, doubled {totals[1]}, silent-only {totals[2]}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--only", choices=["latency", "kills"])
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    print(f"{args.groups} Telegram groups on the fake, its real limits", flush=True)
    if args.only in (None, "latency"):
        asyncio.run(latency(args.groups))
    if args.only in (None, "kills"):
        asyncio.run(kills(args.groups, args.kills))


if __name__ == "__main__":
    main()
