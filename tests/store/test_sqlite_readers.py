"""SQLite files: reading (``bot.store.db.Database.connect``) is on a connection of its own and
waits for no writer (WAL), seeing only what was committed."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.store import Database, tallies
from tests.test_store import bessemer_tally, seed


def url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"


async def test_a_reader_sees_only_what_was_committed_and_waits_for_no_writer(
    tmp_path: Path,
) -> None:
    async with Database(url(tmp_path)) as db:
        await seed(db)
        inside = asyncio.Event()
        go_on = asyncio.Event()

        async def writer() -> None:
            async with db.begin() as conn:
                await tallies.append(conn, bessemer_tally(1, 2))
                inside.set()
                await go_on.wait()

        task = asyncio.create_task(writer())
        await inside.wait()
        async with asyncio.timeout(5), db.connect() as conn:  # the writer holds its turn
            during = await tallies.last(conn, "bessemer-2021")
        go_on.set()
        await task
        async with db.connect() as conn:
            after = await tallies.last(conn, "bessemer-2021")
    assert during is None
    assert after is not None
    assert after.seq == 1
