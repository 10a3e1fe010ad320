"""One kill -9 and restart of the real bot in the middle of a fan-out, on both platforms' fakes.

Used by ``tests/delivery/test_crash.py`` (limits scaled up, so that 500 channels take seconds)
and by ``bench/crash.py`` (the platforms' real limits). The bot is a real subprocess
(``python -m bot run``) on the store at ``store_url``; the fakes run in this process. One
significant update is queued to ``channels`` Discord channels and as many Slack channels before
the bot starts; it is killed with SIGKILL once ``kill_at`` messages have arrived in all (0: at
the first request of the fan-out), then started again until every channel has the message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.base.clock import SystemClock
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform, Wants
from bot.ingest.pipeline import Pipeline
from bot.settings.loader import load
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import Delivery
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import bessemer, tally

REAL = 1
"""``scale`` for the platforms' real limits."""
UPLOADS = ("files.getUploadURLExternal", "files.completeUploadExternal")
"""The Tier 4 methods of a Slack final's chart upload (100 a minute each)."""


@dataclass
class Figures:
    """What one run came to, per platform where it says so."""

    killed_at: int
    """Messages in the channels (both platforms) when the bot was killed."""
    in_doubt: dict[str, int]
    """Deliveries whose request may have gone out when it was killed, per platform."""
    lost: int
    doubled: int
    http_429: int
    extra: dict[str, int]
    """Requests the restart made beyond the posts still missing: Discord's repeated posts
    (dropped by their nonce) and channel reads; Slack's history reads."""
    seconds: float
    """From the bot's first start until every channel had the message."""
    charts_lost: int = 0
    """Slack channels whose final went without its chart (a final only)."""
    charts_doubled: int = 0
    """Slack channels shown the final's chart more than once."""

    def line(self) -> str:
        charts = f", charts lost {self.charts_lost} doubled {self.charts_doubled}"
        return (
            f"killed at {self.killed_at}: in doubt {self.in_doubt}, lost {self.lost}, "
            f"doubled {self.doubled}{charts}, 429s {self.http_429}, "
            f"extra requests {self.extra}, {self.seconds:.1f} s"
        )


async def _autocommit(server_url: str, sql: str) -> None:
    engine = create_async_engine(server_url, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as conn:
            await conn.execute(text(sql))
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def fresh_postgres(server_url: str) -> AsyncIterator[str]:
    """The URL of a new, empty PostgreSQL database next to ``server_url``'s (dropped after):
    the bot's configuration has no schema setting, so each run gets a database of its own."""
    name = f"crash_{uuid.uuid4().hex[:12]}"
    await _autocommit(server_url, f'CREATE DATABASE "{name}"')
    try:
        yield server_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        await _autocommit(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def toml_value(value: object) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def fakes(scale: int) -> tuple[FakeDiscord, FakeSlack]:
    """Both fakes, enforcing the platforms' limits times ``scale`` (the bot is told the same)."""
    return (
        FakeDiscord(global_limit_per_s=50 * scale),
        FakeSlack(
            post_burst=1,
            method_windows={"chat.postMessage": (5 * scale, 1.0)},
            method_limits_per_min={
                "conversations.history": 50 * scale,
                **{m: 100 * scale for m in UPLOADS},
            },
        ),
    )


def _parents(s: FakeSlack, channels: list[str]) -> dict[str, str]:
    """A message in each channel, as its thread's parent: its ts by channel."""
    organiser = s.add_user("organiser")
    return {c: s.post_user_message(c, organiser, "Bessemer: the count begins") for c in channels}


def write_config(
    path: Path, store_url: str, guild: int, d: FakeDiscord, s: FakeSlack, scale: int
) -> None:
    lines = [
        f"[store]\nurl = {toml_value(store_url)}",
        # A restart is a new instance: on PostgreSQL it takes over the dead one's deliveries
        # once their claim expires, and its gateway shard once that lease does (30 s by default:
        # the restart waited that long before Discord sent anything).
        "[cluster]\nclaim_seconds = 3\nshard_lease_seconds = 6",
        f"[discord]\napi_base = {toml_value(d.base_url)}",
        f"gateway_url = {toml_value(d.gateway_url)}",
        f"guilds = [{guild}]",
        f"[discord.limits]\nglobal = [{50 * scale}, 1.0]",
        f"[slack]\napi_base = {toml_value(s.api_url)}",
        f'[slack.limits]\n"chat.postMessage" = [{5 * scale}, 1.0]',
        f'"conversations.history" = [{50 * scale}, 60.0]',
        *(f'"{m}" = [{100 * scale}, 60.0]' for m in UPLOADS),
        "[[counts]]",
        'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'tie_holder = "no"\nreceived = 3215',
        'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
        'source = {kind = "manual"}',
    ]
    path.write_text("\n".join(lines) + "\n")
    load(path)  # the documented format


async def start_bot(config: Path, env: dict[str, str], log: Path) -> asyncio.subprocess.Process:
    with log.open("ab") as sink:  # the child writes its logs to a file, never a full pipe
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "run", "--config", str(config),
            env=env, stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=sink,
        )  # fmt: skip


async def stop(proc: asyncio.subprocess.Process, sig: int) -> None:
    if proc.returncode is None:
        proc.send_signal(sig)
    await proc.wait()


async def either(d: FakeDiscord, s: FakeSlack, check: Callable[[], bool], limit: float) -> None:
    """Wait until ``check()`` holds, re-checking whenever either fake records something.

    Both fakes only poke an event (their own predicate is a no-op that never holds), and
    ``check`` runs once per wake-up, however many requests were recorded meanwhile: it used to
    run four times per recorded change (in each fake's waiter and in a fresh pair of waiters
    made after every change)."""
    changed = asyncio.Event()

    def poke() -> bool:
        changed.set()
        return False

    waits = [asyncio.create_task(f.wait_for(poke, timeout=limit)) for f in (d, s)]
    try:
        async with asyncio.timeout(limit):
            while not check():
                changed.clear()
                await changed.wait()
    finally:
        for task in waits:
            task.cancel()
        for task in waits:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await task


T = TypeVar("T")


class Tally(Generic[T]):
    """How many of a list's items so far pass ``test``: the list only grows (the fakes'
    recordings), so each call reads only the items added since the last."""

    def __init__(self, items: list[T], test: Callable[[T], bool]) -> None:
        self.items, self.test = items, test
        self.read = self.count = 0

    def new(self) -> list[T]:
        """The items added since the last call (that pass ``test``), counted."""
        fresh = [x for x in self.items[self.read :] if self.test(x)]
        self.read += len(self.items) - self.read
        self.count += len(fresh)
        return fresh

    def __call__(self) -> int:
        self.new()
        return self.count


async def left_sending(store_url: str) -> list[Delivery]:
    async with Database(store_url) as db, db.connect() as conn:
        found = []
        for platform in (Platform("discord"), Platform("slack")):
            found += await outbox.in_doubt(conn, platform)
        return found


async def crash_and_restart(
    d: FakeDiscord,
    s: FakeSlack,
    store_url: str,
    tmp: Path,
    *,
    channels: int,
    kill_at: int,
    scale: int,
    limit: float = 600,
    final: bool = False,
    charts_at: int | None = None,
    thread: bool = False,
) -> Figures:
    """``final``: the update is the count's final, with its chart (on Slack, an upload into
    each message's thread); ``charts_at``: kill once that many of them were shown (in the
    chart phase), instead of at ``kill_at`` messages; ``thread``: the Slack subscriptions
    post into a thread (the ``thread`` option), under a parent each channel already has, and
    no Discord channel is subscribed (Slack's threads are what is tried)."""
    guild = d.add_guild("Bessemer organisers")
    d_chans = [d.add_channel(guild, f"count-{i}") for i in range(0 if thread else channels)]
    s_chans = [s.add_channel(f"count-{i}") for i in range(channels)]
    parents = _parents(s, s_chans) if thread else {}
    config = tmp / "tallybot.toml"
    write_config(config, store_url, guild, d, s, scale)
    clock = SystemClock()
    async with Database(store_url) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, bessemer())
            refs = [ChannelRef(Platform("discord"), str(guild), str(c)) for c in d_chans]
            refs += [ChannelRef(Platform("slack"), s.team_id, c) for c in s_chans]
            for ref in refs:
                parent = parents.get(ref.channel)
                wants = Mode.EVENTS if parent is None else Wants(thread=True)
                sub, _ = await sub_rows.subscribe(
                    conn, ref, "bessemer-2021", wants, by="t", at=clock.now()
                )
                if parent is not None:
                    await sub_rows.set_thread_message(conn, sub.id, parent)
        update = (
            tally(738, 1798, challenged=505, received=3041, state=TallyState.FINAL)
            if final
            else tally(84, 201)
        )
        result = await Pipeline(db, clock).ingest(update)
        assert result.message is not None
        assert result.message.significant
        assert result.message.final == final

    env = {
        **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
        "DISCORD_TOKEN": d.token,
        "SLACK_BOT_TOKEN": s.bot_token,
        "SLACK_APP_TOKEN": s.app_token,
        "SLACK_SIGNING_SECRET": s.signing_secret,
    }

    paths = {f"/channels/{c}/messages": c for c in d_chans}
    # What the waits ask after every request the fakes record (a thousand times and more) is
    # read off the requests recorded since the last time (``Tally``); the figures at the end
    # count everything afresh.
    posts_d = Tally(d.requests, lambda r: r.method == "POST" and r.path in paths)
    reads_d = Tally(d.requests, lambda r: r.method == "GET" and r.path in paths)
    posts_to_s = Tally(s.calls, lambda c: c.method == "chat.postMessage")
    reads_s = Tally(  # the channels read back (in threads: their replies)
        s.calls, lambda c: c.method in ("conversations.history", "conversations.replies")
    )
    uploads_s = Tally(s.uploads, lambda u: True)
    charted: set[str | None] = set()

    def on_d() -> int:
        return sum(1 for c in d_chans if d.messages(c))

    def posts_s(c: str) -> int:  # the bot's messages in the channel (or its thread), no files
        if thread:
            return sum(
                1 for m in s.messages(c) if m.thread_ts == parents[c] != m.ts and not m.files
            )
        return sum(1 for m in s.messages(c) if m.thread_ts is None and not m.files)

    def on_s() -> int:
        return sum(1 for c in s_chans if posts_s(c))

    def charts_s(c: str) -> int:
        return sum(1 for u in s.uploads if u.channel == c)

    # A channel seen with the message keeps it (the fakes drop no message); one not seen yet
    # is looked at once a post to it was recorded, and again until it shows the message.
    seen_d: set[int] = set()
    seen_s: set[str] = set()
    unseen_d: set[int] = set()
    unseen_s: set[str] = set()
    to_d = Tally(d.requests, lambda r: r.method == "POST" and r.path in paths)
    slack_ids = set(s_chans)
    to_s = Tally(s.calls, lambda c: c.method == "chat.postMessage")

    def arrived() -> tuple[int, int]:
        """``(on_d(), on_s())``, looking only at the channels posted to and not seen yet."""
        unseen_d.update(paths[r.path] for r in to_d.new())
        unseen_s.update(str(c.args.get("channel")) for c in to_s.new())
        unseen_s.intersection_update(slack_ids)
        shown_d = {c for c in unseen_d if d.messages(c)}
        shown_s = {c for c in unseen_s if posts_s(c)}
        seen_d.update(shown_d)
        unseen_d.difference_update(shown_d)
        seen_s.update(shown_s)
        unseen_s.difference_update(shown_s)
        return len(seen_d), len(seen_s)

    def all_charted() -> bool:
        """``all(charts_s(c) for c in s_chans)``, reading only the uploads since last time."""
        charted.update(u.channel for u in uploads_s.new())
        return charted.issuperset(s_chans)

    def started() -> bool:
        return posts_d() + posts_to_s() >= 1

    log = tmp / "bot.log"
    began = time.monotonic()
    first = await start_bot(config, env, log)
    if charts_at is not None:
        kill = lambda: len(s.uploads) >= charts_at  # noqa: E731
    else:
        kill = started if kill_at == 0 else lambda: sum(arrived()) >= kill_at
    try:
        await either(d, s, kill, limit)
    except TimeoutError:
        raise AssertionError(log.read_text()[-3000:]) from None
    finally:
        await stop(first, signal.SIGKILL)  # kill -9: no cleanup, deliveries left in flight
    killed_at = on_d() + on_s()
    doubtful = [x for x in await left_sending(store_url) if x.sending_at is not None]
    in_doubt = {
        p: sum(1 for x in doubtful if x.channel.platform == p) for p in ("discord", "slack")
    }
    missing_d, missing_s = len(d_chans) - on_d(), channels - on_s()
    posts_before, reads_d_before = posts_d(), reads_d()
    history_before = len(s.calls_to("chat.postMessage")), reads_s()

    # The restart is done when every channel has the message and what was in doubt has been
    # seen to: sent again with its nonce (Discord), looked for once per channel (Slack).
    doubt_d = {x.channel.channel for x in doubtful if x.channel.platform == Platform("discord")}
    doubt_s = {x.channel.channel for x in doubtful if x.channel.platform == Platform("slack")}
    sends_d = len(doubt_d | {str(c) for c in d_chans if not d.messages(c)})

    def done() -> bool:
        return (
            arrived() == (len(d_chans), channels)
            and posts_d() - posts_before >= sends_d
            and reads_s() - history_before[1] >= len(doubt_s)
            and (not final or all_charted())
        )

    second = await start_bot(config, env, log)
    try:
        await either(d, s, done, limit)
        seconds = time.monotonic() - began
    except TimeoutError:
        raise AssertionError(log.read_text()[-3000:]) from None
    finally:
        await stop(second, signal.SIGTERM)
    counts = [len([m for m in d.messages(c) if m.embeds]) for c in d_chans]
    counts += [posts_s(c) for c in s_chans]
    charts = [charts_s(c) for c in s_chans] if final else []
    slack_posts = len(s.calls_to("chat.postMessage")) - history_before[0]
    extra = {
        "discord posts": posts_d() - posts_before - missing_d,
        "discord reads": reads_d() - reads_d_before,
        "slack posts": slack_posts - missing_s,
        "slack reads": reads_s() - history_before[1],
    }
    return Figures(
        killed_at=killed_at,
        in_doubt=in_doubt,
        lost=sum(1 for n in counts if n == 0),
        doubled=sum(1 for n in counts if n > 1),
        http_429=d.count_429 + s.count_429,
        extra=extra,
        seconds=seconds,
        charts_lost=sum(1 for n in charts if n == 0),
        charts_doubled=sum(1 for n in charts if n > 1),
    )
