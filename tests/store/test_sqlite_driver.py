"""SQLite's driver (``bot.store.sqlite_driver``): one trip to the connection's thread a statement,
BEGIN sent with the statement after it, no trip to end a transaction never begun; and a caller
cancelled in the middle of a transaction leaves nothing of it and the connection working."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from sqlalchemy import func, select, text

from bot.errors import StoreError
from bot.store import Database
from bot.store.schema import request_receipts


class Trips:
    def __init__(self) -> None:
        self.count = 0


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Trips:
    counted = Trips()
    original: Callable[..., Awaitable[Any]] = aiosqlite.Connection._execute

    async def execute(conn: aiosqlite.Connection, fn: Any, *args: Any, **kw: Any) -> Any:
        counted.count += 1
        return await original(conn, fn, *args, **kw)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", execute)
    return counted


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}") as opened:
        async with opened.begin() as conn:  # both pools' connections made
            await conn.execute(select(1))
        async with opened.connect() as reader:
            await reader.execute(select(1))
        yield opened


INSERT = text("INSERT INTO request_receipts (digest, expires_at) VALUES (:d, '2030-01-01')")


async def kept(db: Database) -> int:
    async with db.connect() as conn:
        return int(await conn.scalar(select(func.count()).select_from(request_receipts)) or 0)


async def test_a_statement_is_one_trip_and_begin_goes_with_it(db: Database, trips: Trips) -> None:
    async with db.begin() as conn:
        await conn.execute(INSERT, {"d": "a"})
    assert trips.count == 2  # BEGIN IMMEDIATE + INSERT, COMMIT
    trips.count = 0
    async with db.connect() as conn:
        rows = (await conn.execute(select(request_receipts.c.digest))).all()
    assert [r.digest for r in rows] == ["a"]
    assert trips.count == 2  # BEGIN + SELECT and its rows, ROLLBACK
    trips.count = 0
    async with db.begin():
        pass
    assert trips.count == 0  # a transaction that ran nothing


async def test_a_failed_statement_rolls_back_and_the_next_transaction_works(db: Database) -> None:
    async def twice() -> None:
        async with db.begin() as conn:
            await conn.execute(INSERT, {"d": "a"})
            await conn.execute(INSERT, {"d": "a"})  # the same key

    with pytest.raises(StoreError):
        await twice()
    assert await kept(db) == 0
    async with db.begin() as conn:
        await conn.execute(INSERT, {"d": "a"})
    assert await kept(db) == 1


@pytest.mark.parametrize("ticks", [0, 1, 2, 3, 5, 8])
async def test_a_caller_cancelled_mid_transaction_leaves_nothing_and_the_store_working(
    db: Database, ticks: int
) -> None:
    """Cancelled while a statement of its is on the connection's thread, or between two: what
    the thread said of the transaction never came back, so the rollback is made."""
    started = asyncio.Event()

    async def writer() -> None:
        async with db.begin() as conn:
            started.set()
            for i in range(50):
                await conn.execute(INSERT, {"d": f"x{i}"})

    task = asyncio.create_task(writer())
    await started.wait()
    for _ in range(ticks):
        await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with db.begin() as conn:
        await conn.execute(INSERT, {"d": "after"})
    async with db.connect() as conn:
        rows = (await conn.execute(select(request_receipts.c.digest))).all()
    assert [r.digest for r in rows] == ["after"]
