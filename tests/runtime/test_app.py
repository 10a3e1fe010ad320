"""The whole bot against a JSON feed served on loopback: changes (and only changes) reach the
channel, a 304 costs no store write, a broken feed goes stale and admins hear of it once, a bad
tally is rejected with its reason stored, and a restart re-announces nothing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot.commands.request import Request
from bot.domain.message import Message
from bot.domain.subscription import ChannelRef, Platform
from bot.ingest.poller import PollResult
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store import tallies as tally_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock

CHAN = ChannelRef(Platform("console"), "local", "news")
ADMIN = ChannelRef(Platform("console"), "local", "admins")


class Feed:
    """A JSON feed with an ETag that answers 304 when nothing changed."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"yes": 84, "no": 201, "challenged": 505, "status": "counting"}
        self.status = 200
        self.hits: list[int] = []

    async def handle(self, request: web.Request) -> web.Response:
        if self.status != 200:
            self.hits.append(self.status)
            return web.Response(status=self.status)
        body = json.dumps(self.doc)
        etag = f'"{hash(body)}"'
        if request.headers.get("If-None-Match") == etag:
            self.hits.append(304)
            return web.Response(status=304, headers={"ETag": etag})
        self.hits.append(200)
        return web.Response(body=body, content_type="application/json", headers={"ETag": etag})


@pytest.fixture
async def feed() -> AsyncIterator[tuple[Feed, str]]:
    f = Feed()
    app = web.Application()
    app.router.add_get("/bessemer.json", f.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f, f"http://127.0.0.1:{port}/bessemer.json"
    finally:
        await runner.cleanup()


def config(url: str, store: str, tmp: Path) -> Any:
    return parse(
        {
            "store": {"url": store},
            "admins": {"alerts": [str(ADMIN)]},
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": "Amazon BHM1 union election, Bessemer AL",
                    "rule": "majority",
                    "tie_holder": "no",
                    "received": 3215,
                    "stale_after_failures": 2,
                    "choices": [
                        {"id": "yes", "label": "Yes (RWDSU)"},
                        {"id": "no", "label": "No union"},
                    ],
                    "source": {
                        "kind": "http_json",
                        "name": "nlrb-feed",
                        "url": url,
                        "timeout": 5,
                        "fields": {"state": "status"},
                    },
                }
            ],
        },
        tmp / "tallybot.toml",
    )


async def no_sleep(seconds: float) -> None:
    return None


def app_for(cfg: Any, adapter: RecordingAdapter, clock: FakeClock) -> App:
    return App(
        cfg,
        {Platform("console"): lambda commands: adapter},
        clock=clock,
        sleep=no_sleep,
        poll=False,
    )


def headlines(adapter: RecordingAdapter, channel: ChannelRef) -> list[str]:
    return [m.headline if isinstance(m, Message) else m.text for m in adapter.messages(channel)]


async def test_feed_changes_reach_the_channel_and_restart_repeats_nothing(
    feed: tuple[Feed, str], store_file: str, tmp_path: Path, clock: FakeClock
) -> None:
    f, url = feed
    cfg = config(url, store_file, tmp_path)
    adapter = RecordingAdapter()
    async with app_for(cfg, adapter, clock) as app:
        await app.commands.handle(Request(CHAN, "u", "u", "subscribe bessemer-2021 all", home=True))
        poller = app.pollers["bessemer-2021"]
        assert await poller.poll() is PollResult.ACCEPTED
        assert await poller.poll() is PollResult.NOT_MODIFIED  # 304: no store write
        f.doc.update(yes=463, no=1100, status="paused")
        assert await poller.poll() is PollResult.ACCEPTED
        f.doc.update(no=1090)  # went down, not marked a correction
        assert await poller.poll() is PollResult.REJECTED
        await app.idle()
        async with app.db.connect() as conn:
            history = await tally_rows.history(conn, "bessemer-2021")
            rejected = await tally_rows.rejected(conn, "bessemer-2021")
    assert f.hits == [200, 304, 200, 200]
    assert [t.seq for t in history] == [1, 2]
    assert [r.reason for r in rejected] == ["decrease"]
    assert headlines(adapter, CHAN) == [
        "First results: No union leads by 117",
        "Count paused: No union leads by 637",
    ]
    (notice,) = headlines(adapter, ADMIN)
    assert (
        "Rejected a tally for bessemer-2021 from nlrb-feed: figures went down (no 1,100 -> 1,090)"
        in notice
    )

    f.doc.update(no=1100)  # the feed fixed itself; the bot restarts on the same store
    restarted = RecordingAdapter()
    async with app_for(cfg, restarted, clock) as app:
        assert await app.pollers["bessemer-2021"].poll() is PollResult.NO_CHANGE
        f.doc.update(yes=500, status="counting")
        assert await app.pollers["bessemer-2021"].poll() is PollResult.ACCEPTED
        await app.idle()
    assert headlines(restarted, CHAN) == ["Count resumed: No union leads by 600"]


async def test_broken_feed_goes_stale_once_and_recovers(
    feed: tuple[Feed, str], store_file: str, tmp_path: Path, clock: FakeClock
) -> None:
    f, url = feed
    adapter = RecordingAdapter()
    async with app_for(config(url, store_file, tmp_path), adapter, clock) as app:
        poller = app.pollers["bessemer-2021"]
        await poller.poll()
        f.status = 503
        for _ in range(4):
            assert await poller.poll() is PollResult.FAILED
        health = app.health["bessemer-2021"]
        assert health.is_stale
        status = await app.commands.handle(
            Request(CHAN, "u", "u", "status bessemer-2021", home=True)
        )
        assert status.message is not None
        (checked,) = status.message.notes  # the times as values, shown in each reader's zone
        assert str(checked).startswith("Last checked ")
        assert [m.relative for m in checked.moments] == [True, True]
        assert f"; source stale (GET {url}: HTTP 503" in str(checked)  # quoted as it is
        f.status = 200
        await poller.poll()
        await app.idle()
    notices = headlines(adapter, ADMIN)
    assert len(notices) == 2
    assert notices[0].startswith("Source nlrb-feed for bessemer-2021 is stale: 2 failed polls")
    assert notices[1] == f"Source nlrb-feed for bessemer-2021 is back. (instance {app.instance.id})"
    assert f.hits.count(503) == 12  # 4 polls x 3 attempts, transient errors retried


async def test_scheduler_runs_one_job_per_count(
    feed: tuple[Feed, str], store_file: str, tmp_path: Path, clock: FakeClock
) -> None:
    f, url = feed
    adapter = RecordingAdapter()
    cfg = config(url, store_file, tmp_path)
    app = App(cfg, {Platform("console"): lambda commands: adapter}, clock=clock, sleep=no_sleep)
    async with app:
        assert app.scheduler.jobs() == {"bessemer-2021": 15.0}
        import asyncio

        done = asyncio.Event()
        poll = app.pollers["bessemer-2021"].poll

        async def watched() -> object:
            result = await poll()
            done.set()
            return result

        app.scheduler.add("bessemer-2021", 15, watched)
        await asyncio.wait_for(done.wait(), timeout=5)
        app.scheduler.pause("bessemer-2021")
        assert app.scheduler.is_paused("bessemer-2021")
        app.scheduler.resume("bessemer-2021")
        assert not app.scheduler.is_paused("bessemer-2021")
    assert f.hits[0] == 200
