"""Fan-out: one significant update to N Discord and N Slack channels, on the test fakes at the
limits they enforce, delivered by tallybot and, side by side, by a plain loop of sends with the
same client library; and a count's final, which carries its chart (on Slack an upload of three
requests, two of them Tier 4 methods, 100 a minute each).

    python -m bench.fanout [--discord 2000] [--slack 2000] [--only bot|naive|final]

Each scenario runs in its own process (so peak memory is its own; the fake platform runs in
that process too and is included). Printed per scenario: wall time from the tally accepted to
the last channel posted, the ideal time the enforced limits allow, their ratio, the 429s drawn,
channels that got nothing (lost) or more than one copy (doubled), and peak RSS.

Limits enforced by the fakes: Discord 50 requests/s per bot and 5 messages per 5 s per channel;
Slack 1 post per second per channel (burst 3) and, workspace-wide, the window tallybot's Slack
adapter assumes for chat.postMessage (Slack gives no number for it), files.getUploadURLExternal
and files.completeUploadExternal 100 a minute each. "no chart" counts the channels whose final
came without its chart.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from adapters.slack.delivery import SLACK_LIMITS
from bot.delivery.pacing import Route
from bot.domain.model import Tally, TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import parse
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack

COUNT = {
    "id": "bessemer-2021",
    "title": "Amazon BHM1 union election, Bessemer AL",
    "tie_holder": "no",
    "received": 3215,
    "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
    "source": {"kind": "manual"},
}
TALLY = Tally("bessemer-2021", {"yes": 84, "no": 201}, datetime(2021, 4, 8, tzinfo=UTC), "bench")
FINAL = Tally(
    "bessemer-2021", {"yes": 738, "no": 1798}, datetime(2021, 4, 9, tzinfo=UTC), "bench",
    challenged=505, received=3041, state=TallyState.FINAL,  # a final accounts for every ballot
)  # fmt: skip
DISCORD_GLOBAL = (50, 1.0)
_POSTS = next(b for b in SLACK_LIMITS.buckets(Route("chat.postMessage")) if not b.per_channel)
SLACK_WORKSPACE = (_POSTS.window.limit, int(_POSTS.window.seconds))
SLACK_UPLOADS = (100, 60.0)


@dataclass
class Row:
    scenario: str
    channels: int
    seconds: float
    ideal: float
    http_429: int
    lost: int
    doubled: int
    peak_rss_mb: float
    no_chart: int = 0


def ideal(n: int, window: tuple[int, float]) -> float:
    """The last of n requests can start no earlier than this under ``limit`` per ``seconds``."""
    limit, seconds = window
    return (math.ceil(n / limit) - 1) * seconds


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tally_of(counts: list[int]) -> tuple[int, int]:
    return sum(1 for c in counts if c == 0), sum(1 for c in counts if c > 1)


async def wait_until(check: Callable[[], bool], waiter: Any, limit: float) -> None:
    with contextlib.suppress(TimeoutError):  # what never arrived is reported as lost
        await waiter.wait_for(check, timeout=limit)


async def bot_fanout(platform: Platform, n: int, *, final: bool = False) -> Row:
    tally = FINAL if final else TALLY
    kind = "final" if final else "update"
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.sqlite3'}"
        raw: dict[str, Any] = {"store": {"url": store}, "counts": [COUNT]}
        if platform == Platform("discord"):
            fake_d = FakeDiscord()
            async with fake_d:
                guild = fake_d.add_guild("bench")
                chans = [fake_d.add_channel(guild, f"c{i}") for i in range(n)]
                raw["discord"] = {
                    "api_base": fake_d.base_url,
                    "gateway_url": fake_d.gateway_url,
                    "guilds": [guild],
                }
                os.environ["DISCORD_TOKEN"] = fake_d.token
                refs = [ChannelRef(platform, str(guild), str(c)) for c in chans]
                seconds = await run_bot(
                    raw, tmp, refs, tally, fake_d, lambda: count_d(fake_d, chans)
                )
                lost, doubled = tally_of([len(fake_d.messages(c)) for c in chans])
                no_chart = sum(1 for c in chans if final and not any(
                    m.attachments for m in fake_d.messages(c)
                ))  # fmt: skip
                return Row(f"tallybot discord {kind}", n, seconds, ideal(n, DISCORD_GLOBAL),
                           fake_d.count_429, lost, doubled, peak_mb(), no_chart)  # fmt: skip
        fake_s = FakeSlack(method_windows={"chat.postMessage": SLACK_WORKSPACE})
        async with fake_s:
            chans_s = [fake_s.add_channel(f"c{i}") for i in range(n)]
            raw["slack"] = {"api_base": fake_s.api_url}
            os.environ.update(
                SLACK_BOT_TOKEN=fake_s.bot_token,
                SLACK_APP_TOKEN=fake_s.app_token,
                SLACK_SIGNING_SECRET=fake_s.signing_secret,
            )
            refs = [ChannelRef(platform, fake_s.team_id, c) for c in chans_s]

            def done_s() -> int:
                if not final:
                    return count_s(fake_s, chans_s)
                return len({u.channel for u in fake_s.uploads})

            seconds = await run_bot(raw, tmp, refs, tally, fake_s, done_s)
            lost, doubled = tally_of(
                [len([m for m in fake_s.messages(c) if not m.thread_ts]) for c in chans_s]
            )
            charted = {u.channel for u in fake_s.uploads}
            no_chart = sum(1 for c in chans_s if final and c not in charted)
            limit = max(ideal(n, SLACK_WORKSPACE), ideal(n, SLACK_UPLOADS)) if final else None
            return Row(f"tallybot slack {kind}", n, seconds,
                       limit if limit is not None else ideal(n, SLACK_WORKSPACE),
                       fake_s.count_429, lost, doubled, peak_mb(), no_chart)  # fmt: skip


def count_d(fake: FakeDiscord, chans: list[int]) -> int:
    return sum(1 for c in chans if fake.messages(c))


def count_s(fake: FakeSlack, chans: list[str]) -> int:
    return sum(1 for c in chans if fake.messages(c))


async def run_bot(
    raw: dict[str, Any],
    tmp: str,
    refs: list[ChannelRef],
    tally: Tally,
    waiter: Any,
    done: Callable[[], int],
) -> float:
    cfg = parse(raw, Path(tmp) / "bench.toml")
    async with App(cfg, adapter_factories(cfg), poll=False) as app:
        async with app.db.begin() as conn:
            await count_rows.upsert(conn, cfg.counts[0].count)
            for ref in refs:
                await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", Mode.EVENTS, by="bench", at=datetime.now(UTC)
                )
        # The first window after start-up belongs to the adapters' own start-up requests (the
        # dispatcher counts it as used); the update comes in after it, as on a count night.
        await asyncio.sleep(1.5)
        start = time.perf_counter()
        await app.pipeline.ingest(tally)
        n = len(refs)
        await wait_until(lambda: done() >= n, waiter, limit=3600)
        return time.perf_counter() - start


async def naive_discord(n: int) -> Row:
    import discord

    async with FakeDiscord() as fake:
        guild = fake.add_guild("bench")
        chans = [fake.add_channel(guild, f"c{i}") for i in range(n)]
        with fake.patch_discord_py():
            client = discord.Client(intents=discord.Intents.default(), guild_ready_timeout=0.1)
            await client.login(fake.token)
            runner = asyncio.create_task(client.connect(reconnect=False))
            await client.wait_until_ready()
            embed = discord.Embed(title="First results: No union leads by 117")
            start = time.perf_counter()
            for c in chans:  # the plain loop
                channel = client.get_channel(c)
                assert isinstance(channel, discord.TextChannel)
                await channel.send(embed=embed)
            seconds = time.perf_counter() - start
            await client.close()
            runner.cancel()
        lost, doubled = tally_of([len(fake.messages(c)) for c in chans])
        return Row("naive discord.py loop", n, seconds, ideal(n, DISCORD_GLOBAL),
                   fake.count_429, lost, doubled, peak_mb())  # fmt: skip


async def naive_slack(n: int) -> Row:
    from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
    from slack_sdk.web.async_client import AsyncWebClient

    async with FakeSlack(method_windows={"chat.postMessage": SLACK_WORKSPACE}) as fake:
        chans = [fake.add_channel(f"c{i}") for i in range(n)]
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=100))
        start = time.perf_counter()
        for c in chans:  # the plain loop, with slack_sdk's own 429 handler
            await client.chat_postMessage(channel=c, text="First results: No union leads by 117")
        seconds = time.perf_counter() - start
        lost, doubled = tally_of([len(fake.messages(c)) for c in chans])
        return Row("naive slack_sdk loop", n, seconds, ideal(n, SLACK_WORKSPACE),
                   fake.count_429, lost, doubled, peak_mb())  # fmt: skip


SCENARIOS = {
    "bot-discord": lambda n: bot_fanout(Platform("discord"), n),
    "bot-slack": lambda n: bot_fanout(Platform("slack"), n),
    "final-discord": lambda n: bot_fanout(Platform("discord"), n, final=True),
    "final-slack": lambda n: bot_fanout(Platform("slack"), n, final=True),
    "naive-discord": naive_discord,
    "naive-slack": naive_slack,
}


def run_child(scenario: str, n: int) -> Row:
    out = subprocess.run(
        [sys.executable, "-m", "bench.fanout", "--scenario", scenario, "-n", str(n)],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
    )
    return Row(**json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--discord", type=int, default=2000)
    parser.add_argument("--slack", type=int, default=2000)
    parser.add_argument("--only", choices=["bot", "naive", "final"])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("-n", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scenario:
        import logging

        logging.disable(logging.CRITICAL)
        row = asyncio.run(SCENARIOS[args.scenario](args.n))
        print(json.dumps(asdict(row)))
        return
    plan = []
    for kind in ("bot", "naive", "final"):
        if args.only and args.only != kind:
            continue
        if args.discord:
            plan.append((f"{kind}-discord", args.discord))
        if args.slack:
            plan.append((f"{kind}-slack", args.slack))
    print(f"{'scenario':<24}{'channels':>9}{'seconds':>9}{'ideal':>8}{'ratio':>7}"
          f"{'429s':>6}{'lost':>6}{'doubled':>8}{'no chart':>9}{'peak MB':>9}")  # fmt: skip
    for scenario, n in plan:
        r = run_child(scenario, n)
        ratio = r.seconds / r.ideal if r.ideal else float("nan")
        print(
            f"{r.scenario:<24}{r.channels:>9}{r.seconds:>9.1f}{r.ideal:>8.1f}{ratio:>7.2f}"
            f"{r.http_429:>6}{r.lost:>6}{r.doubled:>8}{r.no_chart:>9}{r.peak_rss_mb:>9.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
