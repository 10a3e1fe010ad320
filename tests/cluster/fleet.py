"""Several real ``tallybot run`` processes on one PostgreSQL database, with both platforms'
fakes and a JSON feed served by this process.

Used by ``tests/cluster/test_instances.py`` (limits scaled up so that a fan-out takes seconds)
and ``bench/instances.py``. The instances are started with ids ``i0``, ``i1``, ...; each serves
its ops server on a port of its own (``port = 0``, read from its log).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from aiohttp import web

from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.settings.loader import load
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from tests.delivery.crash_run import toml_value
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import bessemer

PLATFORMS = (Platform("discord"), Platform("slack"))
FEED_COUNT = "feed-count"


def fakes(scale: int) -> tuple[FakeDiscord, FakeSlack]:
    """Both fakes, enforcing the platforms' limits times ``scale`` (the bot is told the same)."""
    per_min = {"conversations.history": 50 * scale}
    per_min |= {
        m: 100 * scale for m in ("files.getUploadURLExternal", "files.completeUploadExternal")
    }
    return (
        FakeDiscord(global_limit_per_s=50 * scale),
        FakeSlack(
            post_burst=1,
            method_windows={"chat.postMessage": (5 * scale, 1.0)},
            method_limits_per_min=per_min,
        ),
    )


class Feed:
    """A JSON feed with an ETag (304 when unchanged); counts the polls it answers."""

    def __init__(self) -> None:
        self.doc: dict[str, object] = {"yes": 84, "no": 201, "status": "counting"}
        self.polls: list[float] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.polls.append(time.monotonic())
        body = json.dumps(self.doc)
        etag = f'"{hash(body)}"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=body, content_type="application/json", headers={"ETag": etag})


def make_fleet(
    d: FakeDiscord, s: FakeSlack, store_url: str, channels: int, slack: int | None = None
) -> Fleet:
    """``channels`` Discord channels and ``slack`` (default as many) Slack channels."""
    guild = d.add_guild("Bessemer organisers")
    d_chans = [d.add_channel(guild, f"count-{i}") for i in range(channels)]
    s_chans = [s.add_channel(f"count-{i}") for i in range(channels if slack is None else slack)]
    return Fleet(d, s, store_url, guild, d_chans, s_chans)


@contextlib.asynccontextmanager
async def serve_feed() -> AsyncIterator[tuple[Feed, str]]:
    feed = Feed()
    app = web.Application()
    app.router.add_get("/feed.json", feed.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield feed, f"http://127.0.0.1:{runner.addresses[0][1]}/feed.json"
    finally:
        await runner.cleanup()


def config_lines(store_url: str, guild: int, d: FakeDiscord, s: FakeSlack, scale: int) -> list[str]:
    """The configuration's store, cluster, ops server and both platforms (no counts)."""
    upload = 100 * scale
    return [
        f"[store]\nurl = {toml_value(store_url)}",
        "[cluster]\nclaim_seconds = 3",
        "[server]\nport = 0",
        f"[discord]\napi_base = {toml_value(d.base_url)}",
        f"gateway_url = {toml_value(d.gateway_url)}",
        f"guilds = [{guild}]",
        f"[discord.limits]\nglobal = [{50 * scale}, 1.0]",
        f"[slack]\napi_base = {toml_value(s.api_url)}",
        f'[slack.limits]\n"chat.postMessage" = [{5 * scale}, 1.0]',
        f'"conversations.history" = [{50 * scale}, 60.0]',
        f'"files.getUploadURLExternal" = [{upload}, 60.0]',
        f'"files.completeUploadExternal" = [{upload}, 60.0]',
    ]


def write_config(
    path: Path, store_url: str, guild: int, d: FakeDiscord, s: FakeSlack, scale: int, feed: str
) -> None:
    lines = [
        *config_lines(store_url, guild, d, s, scale),
        "[[counts]]",
        'id = "bessemer-2021"\ntitle = "Amazon BHM1 union election, Bessemer AL"',
        'tie_holder = "no"\nreceived = 3215',
        'choices = [{id = "yes", label = "Yes (RWDSU)"}, {id = "no", label = "No union"}]',
        'source = {kind = "manual"}',
        "[[counts]]",
        f'id = "{FEED_COUNT}"\ntitle = "A polled count"\ninterval = 1',
        'choices = [{id = "yes", label = "Yes"}, {id = "no", label = "No"}]',
        f'source = {{kind = "http_json", url = {toml_value(feed)}, fields = {{state = "status"}}}}',
    ]
    path.write_text("\n".join(lines) + "\n")
    load(path)  # the documented format


def _status_kb(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` figure in kB (``VmRSS``, ``VmHWM``), 0 once the process is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    """The processes ``pid`` started and that still run."""
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


@dataclass
class Instance:
    """One ``tallybot run`` process."""

    name: str
    proc: asyncio.subprocess.Process
    log: Path
    url: str = ""
    peak_rss_kb: int = 0
    children_peak_kb: int = 0
    """The most its child processes (the one drawing charts) held together, as sampled."""

    def rss(self) -> int:
        """Its peak resident set so far (kB; VmHWM), kept after it is gone; samples its
        children's too (``children_peak_kb``: a child's peak is lost once it exits)."""
        self.peak_rss_kb = max(self.peak_rss_kb, _status_kb(self.proc.pid, "VmHWM"))
        children = sum(_status_kb(pid, "VmHWM") for pid in _children(self.proc.pid))
        self.children_peak_kb = max(self.children_peak_kb, children)
        return self.peak_rss_kb

    def rss_now(self) -> int:
        """Its resident set now (kB; VmRSS), 0 once it is gone."""
        return _status_kb(self.proc.pid, "VmRSS")

    def children_rss_now(self) -> int:
        """Its children's resident sets now, together (kB)."""
        return sum(_status_kb(pid, "VmRSS") for pid in _children(self.proc.pid))

    async def healthz(self, http: aiohttp.ClientSession) -> dict[str, object]:
        async with http.get(f"{self.url}/healthz") as resp:
            body: dict[str, object] = await resp.json()
            return body

    def alive(self) -> bool:
        return self.proc.returncode is None


@dataclass
class Fleet:
    """The instances, the fakes and the channels subscribed."""

    d: FakeDiscord
    s: FakeSlack
    store_url: str
    guild: int
    d_chans: list[int]
    s_chans: list[str]
    instances: list[Instance] = field(default_factory=list)
    db: Database | None = None
    """The store, opened by the test for its own reads (once: opening migrates)."""

    def on_d(self) -> int:
        return sum(1 for c in self.d_chans if self.d.messages(c))

    def on_s(self) -> int:
        return sum(1 for c in self.s_chans if self.top_level(c))

    def top_level(self, channel: str) -> list[object]:
        return [m for m in self.s.messages(channel) if m.thread_ts in (None, m.ts)]

    def copies(self) -> list[int]:
        """How many times each channel shows the message (Discord's channels first)."""
        out = [len([m for m in self.d.messages(c) if m.embeds]) for c in self.d_chans]
        return out + [len(self.top_level(c)) for c in self.s_chans]

    def store(self) -> Database:
        if self.db is None:
            raise RuntimeError("open the fleet's store first")
        return self.db

    async def open_deliveries(self) -> int:
        async with self.store().connect() as conn:
            return sum([await outbox.depth(conn, p) for p in PLATFORMS])

    async def claimed_by(self, name: str) -> int:
        """How many deliveries are SENDING under ``name``'s claim."""
        async with self.store().connect() as conn:
            return len(
                [
                    x
                    for p in PLATFORMS
                    for x in await outbox.in_doubt(conn, p)
                    if x.claimed_by == name
                ]
            )

    async def kill(self, instance: Instance) -> None:
        """kill -9: no cleanup, whatever it was doing is left as it was."""
        instance.rss()
        instance.proc.send_signal(signal.SIGKILL)
        await instance.proc.wait()


async def subscribe_all(fleet: Fleet) -> None:
    now = datetime.now(UTC)
    async with Database(fleet.store_url) as db, db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
        refs = [ChannelRef(PLATFORMS[0], str(fleet.guild), str(c)) for c in fleet.d_chans]
        refs += [ChannelRef(PLATFORMS[1], fleet.s.team_id, c) for c in fleet.s_chans]
        for ref in refs:
            await sub_rows.subscribe(conn, ref, "bessemer-2021", Mode.EVENTS, by="t", at=now)


PYTHON_M = (sys.executable, "-m", "bot")
"""How an instance is started: ``python -m bot``; ``console_script()``: as ``tallybot``."""


def console_script() -> tuple[str]:
    """The ``tallybot`` console script beside this Python (the documented command)."""
    return (str(Path(sys.executable).parent / "tallybot"),)


async def start(
    fleet: Fleet,
    config: Path,
    tmp: Path,
    n: int,
    limit: float = 60,
    command: tuple[str, ...] = PYTHON_M,
) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
        "DISCORD_TOKEN": fleet.d.token,
        "SLACK_BOT_TOKEN": fleet.s.bot_token,
        "SLACK_APP_TOKEN": fleet.s.app_token,
        "SLACK_SIGNING_SECRET": fleet.s.signing_secret,
    }
    for _ in range(n):
        name = f"i{len(fleet.instances)}"
        log = tmp / f"{name}.log"
        with log.open("ab") as sink:
            proc = await asyncio.create_subprocess_exec(
                *command, "run", "--config", str(config),
                env={**env, "TALLYBOT_INSTANCE_ID": name},
                stdin=asyncio.subprocess.DEVNULL, stdout=sink, stderr=sink,
            )  # fmt: skip
        fleet.instances.append(Instance(name, proc, log))
    async with asyncio.timeout(limit), aiohttp.ClientSession() as http:
        for instance in fleet.instances[-n:]:
            while not instance.url:
                for line in instance.log.read_text().splitlines():
                    with contextlib.suppress(ValueError):
                        record = json.loads(line)
                        if record.get("msg") == "ops server listening":
                            instance.url = str(record["url"])
                if instance.proc.returncode is not None:
                    raise AssertionError(instance.log.read_text()[-3000:])
                await asyncio.sleep(0.1)
            while True:
                async with http.get(f"{instance.url}/readyz") as resp:
                    if resp.status == 200:
                        break
                await asyncio.sleep(0.1)


async def stop_all(fleet: Fleet) -> float:
    """SIGTERM every instance still running; the seconds until all had stopped (killed after
    10 s)."""
    began = time.monotonic()
    for instance in fleet.instances:
        instance.rss()
        if instance.alive():
            instance.proc.send_signal(signal.SIGTERM)
    for instance in fleet.instances:
        try:
            async with asyncio.timeout(10):
                await instance.proc.wait()
        except TimeoutError:
            instance.proc.kill()
            await instance.proc.wait()
    return time.monotonic() - began
