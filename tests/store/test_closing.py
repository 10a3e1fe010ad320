"""Closing the store (``bot.store.db.Database.aclose``) while blocks are under way: a write
that ends in time is committed before the connections close, one that does not is cancelled
and rolled back, and every connection is closed once (no "deleted before being closed",
no close waiting for ever)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.commands.inflight import GRACE_S
from bot.errors import StoreError
from bot.runtime.run import STOP_GRACE
from bot.store import Database, tallies
from bot.store.db import CANCEL_WAIT_S, CLOSE_WAIT_S
from tests.test_store import bessemer_tally, seed

SQLITE_MEMORY = "sqlite+aiosqlite://"


async def turns(n: int = 20) -> None:
    """Let the other tasks run ``n`` times."""
    for _ in range(n):
        await asyncio.sleep(0)


async def stored_seqs(url: str, schema: str | None) -> list[int]:
    async with Database(url, schema=schema) as again, again.connect() as conn:
        return [t.seq for t in await tallies.history(conn, "bessemer-2021")]


@pytest.mark.parametrize("memory", [False, True], ids=["file-or-pg", "sqlite-memory"])
async def test_a_write_under_way_when_the_store_closes_is_committed_first(
    store_url: str, store_schema: str | None, memory: bool
) -> None:
    if memory and not store_url.startswith("sqlite"):
        pytest.skip("in memory: SQLite only")
    url = SQLITE_MEMORY if memory else store_url
    db = Database(url, schema=store_schema)
    await db.aopen()
    await seed(db)
    inside, go_on = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with db.begin() as conn:
            await tallies.append(conn, bessemer_tally(463, 1100))
            inside.set()
            await go_on.wait()
            await tallies.append(conn, bessemer_tally(738, 1798, 10))

    writing = asyncio.create_task(writer())
    await inside.wait()
    closing = asyncio.create_task(db.aclose())
    await turns()
    assert not closing.done()  # it waits for the write
    with pytest.raises(StoreError, match="closing"):
        async with db.connect():
            pass
    go_on.set()
    async with asyncio.timeout(5):
        await closing
    assert writing.done()
    writing.result()  # committed, not failed by a connection closed under it
    if not memory:
        assert await stored_seqs(url, store_schema) == [1, 2]


async def test_a_block_that_does_not_end_in_time_is_cancelled_and_rolled_back(
    store_url: str, store_schema: str | None
) -> None:
    db = Database(store_url, schema=store_schema, close_wait=0)
    await db.aopen()
    await seed(db)
    inside, never = asyncio.Event(), asyncio.Event()

    async def stuck() -> None:
        async with db.begin() as conn:
            await tallies.append(conn, bessemer_tally(463, 1100))
            inside.set()
            await never.wait()

    task = asyncio.create_task(stuck())
    await inside.wait()
    async with asyncio.timeout(5):
        await db.aclose()
    assert task.cancelled()
    assert await stored_seqs(store_url, store_schema) == []


async def test_a_sqlite_connection_closed_as_its_task_is_cancelled_twice_is_stopped_once(
    tmp_path: Path,
) -> None:
    """A stop cancels the serving task, and cancels it again past its grace: a block cancelled
    while its connection is being closed had the connection's thread stopped twice, the second
    stop never answered, so its close (and the loop's shutdown) waited for ever."""
    for again_after in range(4):
        db = Database(f"sqlite+aiosqlite:///{tmp_path / f'{again_after}.sqlite3'}")
        await db.aopen()
        await seed(db)
        inside = asyncio.Event()

        async def reading() -> None:
            async with db.begin() as conn:  # noqa: B023 (awaited below, in this turn)
                await tallies.append(conn, bessemer_tally(463, 1100))
                inside.set()  # noqa: B023
                while True:
                    await tallies.last(conn, "bessemer-2021")

        before = asyncio.all_tasks()
        task = asyncio.create_task(reading())
        await inside.wait()
        task.cancel()
        await turns(again_after)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await db.aclose()
        left = asyncio.all_tasks() - before
        if left:  # SQLAlchemy closes a cancelled connection in a task of its own
            _, pending = await asyncio.wait(left, timeout=5)
            assert not pending, f"closing never ended: {pending}"


def test_the_stores_waits_fit_in_the_stops_grace() -> None:
    """A stop answers the commands acknowledged (``GRACE_S``), then closes; the store's waits
    for its blocks leave the rest of the closing room within ``STOP_GRACE``."""
    assert GRACE_S + CLOSE_WAIT_S + CANCEL_WAIT_S <= STOP_GRACE - 1.0


async def test_a_query_still_running_when_the_store_closes_ends_before_the_close_returns(
    tmp_path: Path,
) -> None:
    """A block cancelled while its SQLite query runs in the connection's thread (a stop): the
    thread finishes the query, then the stop SQLAlchemy queued behind it. The close returns
    only once it has, or the thread would answer the loop after a test (or the bot) closed it
    ("Event loop is closed" in a thread, failing the next test)."""
    before = set(threading.enumerate())
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'x.sqlite3'}", close_wait=0, cancel_wait=5)
    await db.aopen()
    running, never = threading.Event(), threading.Event()

    def slow(_: object) -> int:
        running.set()
        never.wait(0.3)  # a query that takes 0.3 s in the connection's thread
        return 1

    async def query() -> None:
        async with db.connect() as conn:
            raw = await conn.get_raw_connection()
            await raw.driver_connection.create_function("slow", 1, slow)  # type: ignore[union-attr]
            await conn.execute(text("SELECT slow(1)"))

    task = asyncio.create_task(query())
    await asyncio.to_thread(running.wait, 5)
    async with asyncio.timeout(10):
        await db.aclose()
    assert task.cancelled()
    left = [t for t in threading.enumerate() if t not in before]
    assert [t for t in left if "_connection_worker_thread" in t.name] == []
