"""Group commit (``bot.store.group_commit``): what many tasks ask for at once is one transaction,
each caller answered with its own result once it committed; an item the store refuses fails
alone."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.errors import StoreError
from bot.store import Database
from bot.store.group_commit import GroupCommit


async def written(db: Database) -> list[int]:
    async with db.connect() as conn:
        return [int(r[0]) for r in await conn.execute(text("SELECT n FROM t ORDER BY n"))]


async def test_many_at_once_are_one_transaction_and_a_refused_one_fails_alone(
    db: Database,
) -> None:
    async with db.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER NOT NULL CHECK (n <> 13))"))

    async def write(conn: AsyncConnection, items: list[int]) -> list[int | Exception]:
        for n in items:
            await conn.execute(text("INSERT INTO t (n) VALUES (:n)"), {"n": n})
        return [n * 10 for n in items]

    group = GroupCommit[int, int](db, write)
    assert await asyncio.gather(*(group(n) for n in range(5))) == [0, 10, 20, 30, 40]
    assert group.transactions == 1
    assert await written(db) == [0, 1, 2, 3, 4]

    got = await asyncio.gather(*(group(n) for n in (11, 12, 13, 14)), return_exceptions=True)
    assert got[:2] == [110, 120]
    assert isinstance(got[2], StoreError)
    assert got[3] == 140
    assert group.transactions == 1 + 3  # the failed one, then each alone
    assert await written(db) == [0, 1, 2, 3, 4, 11, 12, 14]

    with pytest.raises(StoreError):
        await group(13)  # alone: fails as it would have


async def test_a_writer_cancelled_mid_transaction_leaves_no_caller_waiting(db: Database) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def write(conn: AsyncConnection, items: list[int]) -> list[int]:
        started.set()
        await release.wait()
        return items

    group: GroupCommit[int, int] = GroupCommit(db, write)
    first = asyncio.create_task(group(1))
    await started.wait()
    second = asyncio.create_task(group(2))  # waits for the next transaction
    await asyncio.sleep(0)
    assert group._writer is not None
    group._writer.cancel()
    await asyncio.gather(first, second, return_exceptions=True)  # hung here before (timeout)
    assert first.cancelled()
    assert second.cancelled()


async def test_what_a_cancelled_caller_handed_in_is_written_before_the_close(db: Database) -> None:
    async with db.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER NOT NULL)"))
    started = asyncio.Event()
    release = asyncio.Event()

    async def write(conn: AsyncConnection, items: list[int]) -> list[int | Exception]:
        started.set()
        await release.wait()
        for n in items:
            await conn.execute(text("INSERT INTO t (n) VALUES (:n)"), {"n": n})
        return list[int | Exception](items)

    group = GroupCommit[int, int](db, write)
    caller = asyncio.create_task(group(7))  # a message sent, its record handed in
    await started.wait()
    caller.cancel()  # the dispatcher stopping
    await asyncio.gather(caller, return_exceptions=True)
    closing = asyncio.create_task(group.aclose())
    await asyncio.sleep(0)
    assert not closing.done()  # waits for the transaction under way
    release.set()
    await closing
    assert await written(db) == [7]
