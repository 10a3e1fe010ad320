"""A whole bot with its ops server on 127.0.0.1 (port 0), a JSON feed on loopback for its polled
count, a manual count, a recording adapter, a fake clock, and a client that signs pushes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.commands.request import Request
from bot.domain.message import Message
from bot.domain.subscription import ChannelRef, Platform
from bot.ops import signing
from bot.runtime.app import App
from bot.settings.loader import Config, parse
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock

SECRET = "push-secret-5f0c2a9e7d"
CHAN = ChannelRef(Platform("console"), "local", "news")
ADMIN = ChannelRef(Platform("console"), "local", "admins")
POLLED = "bessemer-2021"
MANUAL = "board-2026"


def tally_path(count_id: str) -> str:
    """The push endpoint of ``count_id`` (what a signature covers, with the method)."""
    return f"/api/counts/{count_id}/tally"


class Feed:
    """A JSON feed with an ETag (304 when unchanged) that can be told to fail."""

    def __init__(self) -> None:
        self.doc: dict[str, Any] = {"yes": 84, "no": 201, "challenged": 505, "status": "counting"}
        self.status = 200
        self.echo_auth = False
        """Fail with the request's Authorization header in the reason (a careless feed)."""

    async def handle(self, request: web.Request) -> web.Response:
        if self.status != 200:
            reason = None
            if self.echo_auth:
                reason = f"Denied for {request.headers.get('Authorization')}"
            return web.Response(status=self.status, reason=reason)
        body = json.dumps(self.doc)
        etag = f'"{hash(body)}"'
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers={"ETag": etag})
        return web.Response(body=body, content_type="application/json", headers={"ETag": etag})


@pytest.fixture
async def feed() -> AsyncIterator[tuple[Feed, str]]:
    f = Feed()
    app = web.Application()
    app.router.add_get("/bessemer.json", f.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f, f"http://127.0.0.1:{runner.addresses[0][1]}/bessemer.json"
    finally:
        await runner.cleanup()


def ops_config(
    feed_url: str, tmp: Path, *, server: dict[str, Any] | None = None, **source: Any
) -> Config:
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp / 'var' / 'tallybot.sqlite3'}"},
            "admins": {"alerts": [str(ADMIN)]},
            "server": {"host": "127.0.0.1", "port": 0, **(server or {})},
            "counts": [
                {
                    "id": POLLED,
                    "title": "Amazon BHM1 union election, Bessemer AL",
                    "rule": "majority",
                    "tie_holder": "no",
                    "received": 3215,
                    "status": "counting",
                    "stale_after_failures": 2,
                    "stale_after_minutes": 10,
                    "choices": [
                        {"id": "yes", "label": "Yes (RWDSU)"},
                        {"id": "no", "label": "No union"},
                    ],
                    "source": {
                        "kind": "http_json",
                        "name": "nlrb-feed",
                        "url": feed_url,
                        "timeout": 5,
                        "fields": {"state": "status", "challenged": "challenged"},
                        **source,
                    },
                },
                {
                    "id": MANUAL,
                    "title": "Board election (manual entry)",
                    "rule": "plurality",
                    "status": "counting",
                    "choices": [{"id": "ana"}, {"id": "ben"}, {"id": "cho"}],
                    "source": {"kind": "manual"},
                },
            ],
        },
        tmp / "tallybot.toml",
    )


async def no_sleep(seconds: float) -> None:
    return None


@dataclass
class Bot:
    app: App
    adapter: RecordingAdapter
    clock: FakeClock
    feed: Feed
    feed_url: str
    http: aiohttp.ClientSession

    @property
    def url(self) -> str:
        assert self.app.server is not None
        return self.app.server.url

    async def get(self, path: str) -> tuple[int, Any]:
        async with self.http.get(self.url + path) as resp:
            if resp.content_type == "application/json":
                return resp.status, await resp.json()
            return resp.status, await resp.text()

    async def push(
        self,
        count_id: str,
        body: bytes | dict[str, Any],
        *,
        secret: str = SECRET,
        skew: float = 0.0,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        """POST a tally signed with ``secret``, the timestamp ``skew`` seconds off."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        path = tally_path(count_id)
        signed = signing.headers(secret, self.clock.now().timestamp() + skew, raw, path=path)
        url = self.url + path
        async with self.http.post(url, data=raw, headers={**signed, **(headers or {})}) as resp:
            return resp.status, await resp.json()

    def headlines(self, channel: ChannelRef) -> list[str]:
        out = []
        for m in self.adapter.messages(channel):
            out.append(m.headline if isinstance(m, Message) else m.text)
        return out


AdapterMaker = Callable[[], RecordingAdapter]


@pytest.fixture
def make_adapter() -> AdapterMaker:
    return RecordingAdapter


@pytest.fixture
def push_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TALLYBOT_PUSH_SECRET", SECRET)
    return SECRET


@pytest.fixture
async def bot(
    feed: tuple[Feed, str], tmp_path: Path, push_secret: str, make_adapter: AdapterMaker
) -> AsyncIterator[Bot]:
    f, url = feed
    clock = FakeClock()
    adapter = make_adapter()
    app = App(
        ops_config(url, tmp_path),
        {Platform("console"): lambda commands: adapter},
        clock=clock,
        sleep=no_sleep,
        poll=False,
    )
    async with app, aiohttp.ClientSession() as http:
        for count_id in (POLLED, MANUAL):
            await app.commands.handle(
                Request(CHAN, "u", "u", f"subscribe {count_id} all", home=True)
            )
        yield Bot(app, adapter, clock, f, url, http)
