"""Live updates over Server-Sent Events: every accepted tally reaches the viewers, a viewer
that reconnects catches up (``Last-Event-ID``), the limits hold, and slow viewers are dropped
rather than waited for."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.commands.request import Request
from bot.domain.message import Message
from bot.subscription import ChannelRef, Platform
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from bot.web.broadcast import LOG_SIZE, Broadcaster, Limits
from tests.web.conftest import PRIVATE, PUBLIC, Site, make_app, web_config

Event = dict[str, str]


@asynccontextmanager
async def opened(
    site: Site, count_id: str = PUBLIC, headers: dict[str, str] | None = None, query: str = ""
) -> AsyncIterator[aiohttp.ClientResponse]:
    url = f"{site.url}/c/{count_id}/events{query}"
    async with site.http.get(url, headers=headers or {}) as resp:
        yield resp


async def read_event(resp: aiohttp.ClientResponse) -> Event:
    """The next event (comments and the retry field skipped), waiting at most 5 s."""
    async with asyncio.timeout(5):
        while True:
            block = (await resp.content.readuntil(b"\n\n")).decode()
            if block.startswith((":", "retry:")):
                continue
            return dict(line.split(": ", 1) for line in block.strip().split("\n"))


def data(event: Event) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(event["data"])
    return loaded


async def test_an_accepted_tally_reaches_every_viewer(site: Site) -> None:
    await site.tally(yes=84, no=201)
    async with opened(site) as one, opened(site, query="?last=1") as two:
        assert one.status == 200
        assert one.headers["Content-Type"] == "text/event-stream; charset=utf-8"
        first = await read_event(one)  # no Last-Event-ID: the current figures first
        assert (first["id"], first["event"]) == ("1", "tally")
        result = await site.tally(yes=463, no=1100, challenged=505)
        assert isinstance(result.message, Message)
        for resp in (one, two):
            event = await read_event(resp)
            assert event["id"] == "2"
            shown = data(event)
            assert shown["headline"] == "No union leads by 637"
            assert [r["votes"] for r in shown["rows"]] == ["463", "1,100"]
            assert shown["entry"]["seq"] == 2
            assert shown["chart"] == f"/c/{PUBLIC}/chart-2.svg"


async def test_a_viewer_that_reconnects_catches_up_once(site: Site) -> None:
    for yes, no in ((10, 20), (30, 40), (50, 60)):
        await site.tally(yes=yes, no=no)
    async with opened(site, headers={"Last-Event-ID": "1"}, query="?last=0") as resp:
        assert [(await read_event(resp))["id"] for _ in range(2)] == ["2", "3"]
        await site.tally(yes=70, no=80)
        event = await read_event(resp)
        assert event["id"] == "4"
        assert data(event)["headline"] == "No union leads by 10"
    async with opened(site, query="?last=4") as resp:
        await site.tally(yes=90, no=100)
        assert (await read_event(resp))["id"] == "5"  # nothing twice, nothing missed


async def test_private_counts_have_no_stream(site: Site) -> None:
    await site.tally(PRIVATE, ana=1, ben=2)
    async with opened(site, PRIVATE) as resp:
        assert resp.status == 404
        assert "There is no public count at this address." in await resp.text()


async def test_one_address_holds_a_bounded_number_of_streams(tmp_path: Path) -> None:
    config = web_config(tmp_path, web={"streams_per_ip": 2})
    async with make_app(config, FakeClock()) as app, aiohttp.ClientSession() as http:
        site = Site(app, FakeClock(), http)
        async with opened(site) as one, opened(site) as two:
            assert (one.status, two.status) == (200, 200)
            async with opened(site) as three:
                assert three.status == 429
                assert three.headers["Retry-After"] == "5"
        assert app.web is not None
        async with asyncio.timeout(5):  # the server sees them leave
            await app.web.broadcaster.until(
                lambda: app.web is None or not app.web.broadcaster.viewers
            )
        async with opened(site) as again:
            assert again.status == 200


async def test_a_viewer_that_does_not_read_never_holds_up_chat(site: Site) -> None:
    news = ChannelRef(Platform("console"), "local", "news")
    await site.app.commands.handle(Request(news, "u", "u", f"subscribe {PUBLIC} all"))
    async with opened(site) as stuck:
        assert stuck.status == 200  # and never read from again
        for i in range(1, 30):
            await site.tally(yes=10 * i, no=10 * i + 1)
            await site.app.idle()
        adapter = site.app.adapters[Platform("console")]
        assert isinstance(adapter, RecordingAdapter)
        assert len(adapter.messages(news)) == 29  # every update went to chat meanwhile


async def noop() -> None:
    return None


def broadcaster() -> Broadcaster:
    async def event(count_id: str, seq: int) -> bytes:
        return f"id: {seq}\n\n".encode()

    return Broadcaster(event, Limits(per_ip=4, total=5, lifetime=100.0, write_timeout=10.0))


async def test_a_viewer_too_far_behind_is_dropped() -> None:
    b = broadcaster()
    aborted: list[str] = []
    slow = b.join(PUBLIC, "10.0.0.1", now=0.0, abort=lambda: aborted.append("slow"))
    keen = b.join(PUBLIC, "10.0.0.2", now=0.0, abort=lambda: aborted.append("keen"))
    channel = b.channels[PUBLIC]
    for seq in range(1, LOG_SIZE + 2):
        channel.post(seq, b"x")
        assert await b.next(keen) == [(seq, b"x")]
    assert await b.next(slow) is None  # the log no longer reaches back to where it was
    assert b.dropped == 1


async def test_limits_and_the_sweep() -> None:
    b = broadcaster()
    aborted: list[str] = []
    viewers = [
        b.join(PUBLIC, "10.0.0.1", now=float(i), abort=lambda i=i: aborted.append(str(i)))
        for i in range(4)
    ]
    with pytest.raises(Exception, match="at most 4 live streams from one address"):
        b.join(PUBLIC, "10.0.0.1", now=0.0, abort=lambda: None)
    b.join(PUBLIC, "10.0.0.9", now=0.0, abort=lambda: None)
    with pytest.raises(Exception, match="too many live streams"):
        b.join(PUBLIC, "10.0.0.8", now=0.0, abort=lambda: None)
    viewers[0].writing_since = 5.0
    assert b.sweep(now=12.0) == 0  # stuck writing for 7 s: not yet
    viewers[0].writing_since = None  # its write went through
    viewers[1].writing_since = 1.0
    assert b.sweep(now=12.0) == 1  # that one: aborted
    assert aborted == ["1"]
    assert b.sweep(now=103.5) == 4  # past their lifetime: ended in good order
    assert aborted == ["1"]
    assert b.viewers == 0
    assert b.per_ip("10.0.0.1") == 0
