"""Two instances ingesting tallies of one count at the same moment (PostgreSQL): each tally is
weighed against the one stored just before it, so that a count never goes down silently."""

from __future__ import annotations

import asyncio

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.detect import Accepted, Rejected, RejectReason
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock
from tests.cluster.test_claims import two
from tests.helpers import bessemer, tally

__all__ = ["two"]

BEHIND = text(
    """
    WITH RECURSIVE waiting(pid) AS (
        SELECT pid FROM pg_locks WHERE NOT granted AND :pid = ANY(pg_blocking_pids(pid))
        UNION
        SELECT l.pid FROM pg_locks l JOIN waiting w
            ON NOT l.granted AND w.pid = ANY(pg_blocking_pids(l.pid))
    )
    SELECT count(*) FROM waiting
    """
)
"""How many server processes wait, directly or behind another that waits, for ``:pid``
(``pg_locks``, read anew by each statement, unlike ``pg_stat_activity`` in a transaction)."""


async def behind(conn: AsyncConnection, pid: int) -> int:
    return int((await conn.execute(BEHIND, {"pid": pid})).scalar_one())


async def test_two_instances_ingesting_one_count_at_once_weigh_each_against_the_last(
    two: tuple[Database, Database],
) -> None:
    """Both tallies are each a valid next one after 100-100, but not after each other: whichever
    is stored second goes down from the first and must be rejected. The test holds back every
    tally INSERT (a SHARE lock on the table) until both instances' transactions wait."""
    one, other = two
    clock = FakeClock()
    async with one.begin() as conn:
        await count_rows.upsert(conn, bessemer())
    assert (await Pipeline(one, clock).ingest(tally(100, 100))).accepted
    yes_up, no_up = tally(200, 100, source="a"), tally(100, 200, source="b")
    async with one.begin() as hold:
        pid = int((await hold.execute(text("SELECT pg_backend_pid()"))).scalar_one())
        await hold.execute(text("LOCK TABLE tallies IN SHARE MODE"))  # reads go on, no INSERT
        racing = [
            asyncio.create_task(Pipeline(db, clock).ingest(t))
            for db, t in ((one, yes_up), (other, no_up))
        ]
        async with asyncio.timeout(10):
            while await behind(hold, pid) < 2:  # a round trip each time
                pass
    results = await asyncio.gather(*racing)
    async with one.connect() as conn:
        stored = await tally_rows.history(conn, "bessemer-2021")
    assert [t.seq for t in stored] == [1, 2]
    assert [type(r.detection) for r in sorted(results, key=lambda r: r.accepted)] == [
        Rejected,
        Accepted,
    ]
    [won] = [r for r in results if r.accepted]
    [lost] = [r for r in results if not r.accepted]
    assert won.previous is not None
    assert won.previous.seq == 1
    assert stored[1].votes == won.tally.votes
    assert isinstance(lost.detection, Rejected)
    assert lost.detection.reason is RejectReason.DECREASE
