"""Poll leases: one instance polls a count at a time; a dead holder's count is taken over once
its lease expires (interval + 5 s after its last poll); a tally read by two instances is stored
once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.cluster import Instance
from bot.cluster.polls import Poll, PollLeases
from bot.domain.detect import NoChange
from bot.ingest.pipeline import Ingested, Pipeline
from bot.store import Database, leases
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock
from tests.cluster.test_claims import two
from tests.helpers import bessemer, tally

__all__ = ["two"]
T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


async def test_a_lease_is_its_holders_until_it_expires(db: Database) -> None:
    until = T0 + timedelta(seconds=20)
    async with db.begin() as conn:
        assert await leases.take(conn, "poll:a", "one", now=T0, until=until)
        assert not await leases.take(conn, "poll:a", "two", now=T0, until=until)
        assert await leases.take(conn, "poll:a", "one", now=T0, until=until)  # renewed
        assert await leases.take(conn, "poll:b", "two", now=T0, until=until)  # another lease
        later = until + timedelta(seconds=1)
        assert await leases.take(conn, "poll:a", "two", now=later, until=later)
        assert not await leases.take(conn, "poll:a", "one", now=later, until=later)
        assert await leases.release(conn, "poll:a", "two")
        assert not await leases.release(conn, "poll:a", "two")
        assert await leases.holders(conn, "poll:") == {"poll:b": ("two", until)}


async def test_a_dead_holders_count_is_taken_over_and_no_tally_is_stored_twice(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    async with a.begin() as conn:
        await count_rows.upsert(conn, bessemer())
    one, other = Instance("one"), Instance("other")
    polls: list[str] = []

    def poller(name: str, db: Database) -> Poll:
        pipeline = Pipeline(db, clock)

        async def poll() -> object:
            polls.append(name)
            return await pipeline.ingest(tally(84, 201))

        return poll

    guard_one = PollLeases(a, clock, one).guard("bessemer-2021", 15, poller("one", a))
    guard_other = PollLeases(b, clock, other).guard("bessemer-2021", 15, poller("other", b))
    for _ in range(3):  # every 15 s both instances' turns come; one polls
        await guard_one()
        await guard_other()
        clock.advance(15)
    assert polls == ["one"] * 3
    assert (one.counts, other.counts) == ({"bessemer-2021"}, set())
    # "one" dies after its last poll (15 s ago); its lease lasts 15 + 5 s from that poll.
    await guard_other()
    assert polls == ["one"] * 3
    clock.advance(6)
    result = await guard_other()
    assert polls == ["one"] * 3 + ["other"]
    assert other.counts == {"bessemer-2021"}
    assert isinstance(result, Ingested)
    assert isinstance(result.detection, NoChange)
    async with b.connect() as conn:
        assert [t.seq for t in await tally_rows.history(conn, "bessemer-2021")] == [1]
