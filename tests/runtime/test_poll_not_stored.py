"""A tally read but not stored is read again at the next poll, not hidden behind "not modified".

The store refuses the first write (a SQLite trigger, dropped afterwards, stands for a full disk
or a lost connection); the feed answers 304 to a conditional GET with its ETag, a file keeps its
size and time, a replay its position. Each test fails if the source still remembers the tally
that never reached the store.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import text

from bot.domain.model import TallyState
from bot.ingest.pipeline import Pipeline
from bot.ingest.poller import Poller, PollResult
from bot.ingest.sources.base import Source
from bot.ingest.sources.file import FileSource
from bot.ingest.sources.health import SourceHealth
from bot.ingest.sources.http import HttpOptions
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.mapping import FieldMap
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.timeline import TimelineEntry
from bot.store import Database
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock
from tests.fakes.loopback.server import LoopbackServer
from tests.helpers import bessemer

DOC = b'{"yes": 463, "no": 1100, "status": "paused"}'
FIELDS = FieldMap(votes={"yes": "yes", "no": "no"}, state="status")


class Feed(LoopbackServer):
    """A feed with an ETag: 304 to a GET that sends it back."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    def application(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/feed", self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        sent = request.headers.get("If-None-Match")
        self.asked.append(sent)
        if sent == '"v1"':
            return web.Response(status=304)
        return web.Response(body=DOC, content_type="application/json", headers={"ETag": '"v1"'})


@pytest.fixture
async def feed() -> AsyncIterator[tuple[Feed, str]]:
    async with Feed() as served:
        yield served, f"http://127.0.0.1:{served.port}/feed"


def awaiting(task: asyncio.Task[object]) -> set[str]:
    """The names of the coroutines ``task`` waits in (its chain of awaits)."""
    names: set[str] = set()
    coro: Any = task.get_coro()
    while inspect.iscoroutine(coro):
        names.add(coro.cr_code.co_name)
        coro = coro.cr_await
    return names


async def refuse_tallies(db: Database, refuse: bool) -> None:
    async with db.begin() as conn:
        if refuse:
            await conn.execute(
                text(
                    "CREATE TRIGGER refuse BEFORE INSERT ON tallies "
                    "BEGIN SELECT RAISE(ABORT, 'disk full'); END"
                )
            )
        else:
            await conn.execute(text("DROP TRIGGER refuse"))


async def stored(db: Database) -> tuple[int, int] | None:
    async with db.connect() as conn:
        last = await tally_rows.last(conn, "bessemer-2021")
    return None if last is None else (last.votes["yes"], last.votes["no"])


async def refused_then_polled(db: Database, clock: FakeClock, source: Source) -> PollResult:
    """Poll while the store refuses, then again once it takes writes: the second result."""
    poller = Poller("bessemer-2021", source, Pipeline(db, clock), SourceHealth(clock))
    await refuse_tallies(db, True)
    with pytest.raises(Exception, match="disk full"):
        await poller.poll()
    assert await stored(db) is None
    await refuse_tallies(db, False)
    return await poller.poll()


async def test_an_http_feed_is_fetched_without_its_etag_after_the_store_refused_its_tally(
    sqlite_db: Database, clock: FakeClock, feed: tuple[Feed, str]
) -> None:
    served, url = feed
    source = HttpJsonSource(
        bessemer(), HttpOptions(url), clock=clock, fields=FIELDS, name="nlrb-feed"
    )
    async with source:
        assert await refused_then_polled(sqlite_db, clock, source) is PollResult.ACCEPTED
    assert await stored(sqlite_db) == (463, 1100)
    assert served.asked == [None, None]  # the second GET was not conditional


async def test_a_file_is_read_again_after_the_store_refused_its_tally(
    sqlite_db: Database, clock: FakeClock, tmp_path: Path
) -> None:
    path = tmp_path / "feed.json"
    path.write_bytes(DOC)
    source = FileSource(bessemer(), path, clock=clock, fields=FIELDS)
    async with source:
        assert await refused_then_polled(sqlite_db, clock, source) is PollResult.ACCEPTED
    assert await stored(sqlite_db) == (463, 1100)
    assert source.reads == 2


async def test_a_replay_hands_its_entry_again_after_the_store_refused_it(
    sqlite_db: Database, clock: FakeClock
) -> None:
    entry = TimelineEntry(at=0.0, votes={"yes": 463, "no": 1100}, state=TallyState.PAUSED)
    source = ReplaySource.from_entries(bessemer(), [entry], clock=clock)
    async with source:
        assert await refused_then_polled(sqlite_db, clock, source) is PollResult.ACCEPTED
    assert await stored(sqlite_db) == (463, 1100)
    assert source.done


async def test_a_reading_dropped_when_the_poll_lease_was_lost_is_read_again_once_held(
    sqlite_db: Database, clock: FakeClock, feed: tuple[Feed, str]
) -> None:
    served, url = feed
    held = [False]
    source = HttpJsonSource(
        bessemer(), HttpOptions(url), clock=clock, fields=FIELDS, name="nlrb-feed"
    )
    poller = Poller(
        "bessemer-2021",
        source,
        Pipeline(sqlite_db, clock),
        SourceHealth(clock),
        holds=partial(lambda h: h[0], held),
    )
    async with source:
        assert await poller.poll() is PollResult.LEASE_LOST
        held[0] = True
        assert await poller.poll() is PollResult.ACCEPTED
        assert await poller.poll() is PollResult.NOT_MODIFIED  # and then the ETag again
    assert served.asked == [None, None, '"v1"']
    assert await stored(sqlite_db) == (463, 1100)


async def test_a_poll_cancelled_while_its_tally_waits_for_the_store_reads_it_again(
    sqlite_db: Database, store_file: str, clock: FakeClock, feed: tuple[Feed, str]
) -> None:
    """Another process holds the store's write lock; the poll is cancelled while its write
    waits for it (the bot stopping), then polls again once the lock is let go."""
    served, url = feed
    source = HttpJsonSource(
        bessemer(), HttpOptions(url), clock=clock, fields=FIELDS, name="nlrb-feed"
    )
    poller = Poller("bessemer-2021", source, Pipeline(sqlite_db, clock), SourceHealth(clock))
    async with source, Database(store_file) as other:
        async with other.begin():
            polling = asyncio.create_task(poller.poll())
            for _ in range(10_000):  # until the poll waits in the pipeline, for the lock
                if "ingest" in awaiting(polling):
                    break
                await asyncio.sleep(0)
            assert "ingest" in awaiting(polling)
            polling.cancel()
            with pytest.raises(asyncio.CancelledError):
                await polling
        assert await poller.poll() is PollResult.ACCEPTED
    assert served.asked == [None, None]
    assert await stored(sqlite_db) == (463, 1100)
