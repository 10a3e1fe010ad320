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
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import RequestError
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from bot.web.broadcast import LAST_CHUNK, MAX_BUFFERED, Broadcaster, Limits, chunk
from bot.web.events import Counts
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
        assert one.headers["Content-Type"] == "text/event-stream"
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


class Wire:
    """A connection that keeps what is written to it; ``unread`` bytes sit in its buffer."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.unread = 0
        self.aborted = False
        self.closed = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def get_write_buffer_size(self) -> int:
        return self.unread

    def is_closing(self) -> bool:
        return self.aborted or self.closed

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True


def broadcaster() -> Broadcaster:
    async def event(count_id: str, seq: int) -> bytes:
        return f"id: {seq}\n\n".encode()

    return Broadcaster(event, Limits(per_ip=4, total=5, lifetime=100.0, write_timeout=10.0))


async def test_a_viewer_that_does_not_read_is_dropped_and_the_others_served() -> None:
    b = broadcaster()
    slow, keen = Wire(), Wire()
    for wire, ip in ((slow, "10.0.0.1"), (keen, "10.0.0.2")):
        b.join(PUBLIC, ip, now=0.0, connection=wire).catch_up()
    await b.post(PUBLIC, 1, b"one")
    slow.unread = MAX_BUFFERED + 1
    await b.post(PUBLIC, 2, b"two")
    assert keen.written == [chunk(b"one"), chunk(b"two")]
    assert slow.written == [chunk(b"one")]
    assert slow.aborted
    assert not keen.aborted
    assert (b.dropped, b.viewers) == (1, 1)


async def test_events_wait_until_the_viewer_has_caught_up_and_come_once() -> None:
    b = broadcaster()
    wire = Wire()
    viewer = b.join(PUBLIC, "10.0.0.1", now=0.0, connection=wire, chunked=False)
    await b.post(PUBLIC, 3, b"three")  # while it reads what it missed from the store
    await b.post(PUBLIC, 4, b"four")
    assert wire.written == []
    viewer.sent = 3  # the store had up to 3
    viewer.catch_up()
    await b.post(PUBLIC, 4, b"four")
    await b.post(PUBLIC, 0, b": ping\n\n")
    assert wire.written == [b"four", b": ping\n\n"]  # HTTP/1.0: no chunks


async def test_limits_and_the_sweep() -> None:
    b = broadcaster()
    wires = [Wire() for _ in range(5)]
    viewers = [b.join(PUBLIC, "10.0.0.1", now=float(i), connection=wires[i]) for i in range(4)]
    with pytest.raises(RequestError, match="at most 4 live streams from one address"):
        b.join(PUBLIC, "10.0.0.1", now=0.0, connection=Wire())
    b.join(PUBLIC, "10.0.0.9", now=0.0, connection=wires[4])
    with pytest.raises(RequestError, match="too many live streams"):
        b.join(PUBLIC, "10.0.0.8", now=0.0, connection=Wire())
    wires[0].unread = 100
    wires[1].unread = 100
    assert b.sweep(now=1.0) == 0
    wires[0].unread = 50  # it reads: it moves
    assert b.sweep(now=11.5) == 1  # the other has not moved for 10.5 s: dropped
    assert [w.aborted for w in wires] == [False, True, False, False, False]
    assert viewers[1].closed
    assert wires[1].written == []  # aborted: no end of the body
    wires[0].unread = 0  # it has read everything
    assert b.sweep(now=103.5) == 4  # past their lifetime: ended in good order
    assert not any(w.aborted for w in (wires[0], wires[2], wires[3], wires[4]))
    assert all(v.closed for v in viewers)
    assert all(w.closed and w.written == [LAST_CHUNK] for w in (wires[0], wires[2], wires[3]))
    assert (b.viewers, b.per_ip("10.0.0.1"), b.dropped) == (0, 0, 1)


async def test_behind_a_proxy_the_limit_is_per_viewer(tmp_path: Path) -> None:
    config = web_config(tmp_path, web={"streams_per_ip": 1, "forwarded_for": True})
    async with make_app(config, FakeClock()) as app, aiohttp.ClientSession() as http:
        site = Site(app, FakeClock(), http)
        via = {"X-Forwarded-For": "203.0.113.9, 10.0.0.2"}
        async with (
            opened(site, headers=via) as one,
            opened(site, headers={"X-Forwarded-For": "203.0.113.7"}) as other,
            opened(site, headers={"X-Forwarded-For": "198.51.100.1, 10.0.0.2"}) as same,
        ):
            assert (one.status, other.status, same.status) == (200, 200, 429)


class Counted:
    """The configured lookup, counting how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def is_public(self, count_id: str) -> bool:
        self.asked += 1
        return count_id == PUBLIC


async def test_a_crowd_reconnecting_at_once_costs_one_read(site: Site) -> None:
    await site.tally(yes=84, no=201)
    lookup = Counted()
    counts = Counts(site.app.db, lookup, lambda count_id: None)
    found = await asyncio.gather(*(counts.visible(PUBLIC) for _ in range(50)))
    assert all(c is not None and c.id == PUBLIC for c in found)
    assert lookup.asked == 1
    missed = await asyncio.gather(*(counts.missed(PUBLIC, 0) for _ in range(50)))
    assert all([seq for seq, _ in m] == [1] for m in missed)
    assert lookup.asked == 1  # remembered meanwhile


async def test_an_open_stream_holds_no_task_once_caught_up(site: Site) -> None:
    """After the catch-up the connection is the viewer's own (no request, no handler task):
    thousands of open streams cost the server no task each; events and leaving still work."""
    await site.tally(yes=84, no=201)
    web = site.app.web
    assert web is not None
    before = asyncio.all_tasks()
    async with opened(site) as one, opened(site) as two, opened(site) as three:
        for resp in (one, two, three):
            assert (await read_event(resp))["id"] == "1"
        started = asyncio.all_tasks() - before
        if started:  # the handlers finish as they hand over (most have already)
            await asyncio.wait(started, timeout=5)
        assert all(task.done() for task in started)
        assert web.broadcaster.viewers == 3
        await site.tally(yes=463, no=1100)
        for resp in (one, two, three):
            assert (await read_event(resp))["id"] == "2"
    async with asyncio.timeout(5):  # the server sees them leave
        await web.broadcaster.until(lambda: web.broadcaster.viewers == 0)
    assert web.broadcaster.dropped == 0
