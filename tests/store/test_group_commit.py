"""SQLite's group commit (``bot.store.db.Database.begin``): transactions waiting one behind the
other share one COMMIT, yet each is its own: one that fails undoes only itself, and a block that
has ended is committed (another connection sees it). Reading waits for no writer."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from bot.store import Database, tallies
from bot.store.db import GROUP
from tests.test_store import Boom, bessemer_tally, seed


@pytest.fixture
def commits() -> Iterator[list[int]]:
    """Every COMMIT of a root transaction, on any engine, while the test runs."""
    seen: list[int] = []

    def committed(conn: Connection) -> None:
        seen.append(1)

    event.listen(Engine, "commit", committed)
    try:
        yield seen
    finally:
        event.remove(Engine, "commit", committed)


def url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"


async def test_writers_in_line_share_a_commit_and_one_that_fails_undoes_only_itself(
    tmp_path: Path, commits: list[int]
) -> None:
    async with Database(url(tmp_path)) as db, Database(url(tmp_path)) as other:
        await seed(db)
        commits.clear()
        seen_by_other: dict[int, int] = {}

        async def writer(i: int) -> int:
            async with db.begin() as conn:
                seq = (await tallies.append(conn, bessemer_tally(i, 1000 - i))).seq
                if i == 7:
                    raise Boom
            async with other.connect() as conn:  # ended: committed, for everyone
                history = await tallies.history(conn, "bessemer-2021", limit=1000)
            seen_by_other[i] = sum(1 for t in history if t.seq == seq)
            return seq

        done = await asyncio.gather(*(writer(i) for i in range(40)), return_exceptions=True)
        async with db.connect() as conn:
            stored = await tallies.history(conn, "bessemer-2021", limit=1000)

    assert isinstance(done[7], Boom)
    assert [i for i, d in enumerate(done) if isinstance(d, BaseException)] == [7]
    assert sorted(t.votes["yes"] for t in stored) == [i for i in range(40) if i != 7]
    assert sorted(t.seq for t in stored) == sorted(d for d in done if isinstance(d, int))
    assert seen_by_other == {i: 1 for i in range(40) if i != 7}
    assert 40 / GROUP <= len(commits) < 10  # committed together, at most GROUP at once


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
