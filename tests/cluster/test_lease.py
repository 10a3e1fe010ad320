"""One lease type for polls, shards and sending: held until a tenth of its life before it
expires (by this instance's clock, whatever one renewal did), due for renewal once a third of
its life has passed, taken and handed back in one statement for any number."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.cluster.lease import Holder, Lease, shared
from bot.store import Database, leases
from bot.testing.clock import FakeClock

T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


def test_a_lease_is_held_until_a_tenth_of_its_life_before_it_expires() -> None:
    clock = FakeClock(T0)
    lease = Lease("shard:0", 9.0, clock)
    assert not lease.held
    assert not lease.due
    lease.taken(clock.monotonic())
    assert lease.held
    assert lease.left() == pytest.approx(8.1)
    clock.advance(2.9)
    assert not lease.due  # a third of 9 s not yet past
    clock.advance(0.1)
    assert lease.due
    clock.advance(5.0)
    assert lease.held  # a renewal that failed or stalled meanwhile changes nothing
    clock.advance(0.1)
    assert not lease.held
    assert not lease.due
    assert lease.left() == 0.0
    lease.taken(clock.monotonic())
    lease.lost()
    assert not lease.held


async def test_a_holder_takes_many_in_one_statement_and_hands_them_back(db: Database) -> None:
    clock = FakeClock(T0)
    one, other = Holder(db, "one", clock), Holder(db, "other", clock)
    a, b = Lease("poll:a", 7.0, clock), Lease("poll:b", 7.0, clock)
    theirs = Lease("poll:a", 7.0, clock)
    assert await one.take([a, b]) == {"poll:a", "poll:b"}  # a transaction of its own
    assert await other.take([theirs]) == set()
    assert a.held
    assert b.held
    assert not theirs.held
    async with one.transaction() as conn:  # or the caller's
        await one.hand_back([a], conn=conn)  # free at once
        await one.hand_back([b], after=2.0, conn=conn)  # free 2 s from now
        assert await leases.holders(conn, "poll:") == {
            "poll:b": ("one", T0.replace(second=2)),
        }
    assert not a.held
    assert not b.held
    async with other.transaction() as conn:
        assert await other.take([theirs, Lease("poll:b", 7.0, clock)], conn) == {"poll:a"}
    assert theirs.held
    assert shared(db) == (db.dialect_name == "postgresql")
    assert not shared(None)
