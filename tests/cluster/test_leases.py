"""Poll leases: one instance polls a count at a time; a dead holder's count is taken over once
its lease expires (interval + 5 s after its last poll); a tally read by two instances is stored
once."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.cluster import Instance
from bot.cluster.lease import Holder, Lease
from bot.cluster.polls import Poll, PollLeases
from bot.domain.detect import NoChange
from bot.domain.model import Tally
from bot.ingest.pipeline import Ingested, Pipeline
from bot.ingest.poller import Poller, PollResult
from bot.ingest.sources.health import SourceHealth
from bot.store import Database, leases
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock, Timers
from bot.testing.sources import FakeSource
from tests.cluster.test_claims import two
from tests.helpers import bessemer, tally

__all__ = ["two"]
T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


async def no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


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


async def test_many_leases_are_taken_and_renewed_in_one_statement(db: Database) -> None:
    until = T0 + timedelta(seconds=20)
    later = T0 + timedelta(seconds=30)
    async with db.begin() as conn:
        assert await leases.take_many(conn, {"poll:a": until}, "one", now=T0) == {"poll:a"}
        wanted = {"poll:a": later, "poll:b": later, "poll:c": until}
        assert await leases.take_many(conn, wanted, "two", now=T0) == {"poll:b", "poll:c"}
        assert await leases.take_many(conn, wanted, "one", now=T0) == {"poll:a"}
        assert await leases.take_many(conn, {}, "one", now=T0) == set()
        assert await leases.holders(conn, "poll:") == {
            "poll:a": ("one", later),
            "poll:b": ("two", later),
            "poll:c": ("two", until),
        }
        # "two" stopped renewing "poll:c": once it has expired, "one" takes it with its own.
        after = until + timedelta(seconds=1)
        again = {"poll:a": later, "poll:c": later}
        assert await leases.take_many(conn, again, "one", now=after) == {"poll:a", "poll:c"}
        assert await leases.release_many(conn, ["poll:a", "poll:b", "poll:c"], "one") == 2
        assert await leases.holders(conn, "poll:") == {"poll:b": ("two", later)}


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

    # Batches at once (no wait to renew with others), until "one" dies.
    alive = Gate()
    alive.open.set()
    leases_one = PollLeases(a, clock, one, sleep=alive.sleep)
    leases_other = PollLeases(b, clock, other, sleep=no_wait)
    guard_one = leases_one.guard("bessemer-2021", 15, poller("one", a))
    guard_other = leases_other.guard("bessemer-2021", 15, poller("other", b))
    for turn in range(3):  # every 15 s both instances' turns come; one polls
        await guard_one()
        await guard_other()
        if turn == 2:  # "one" dies after its last poll: nothing renews its lease
            await alive.stop()
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
    await leases_one.release_all()
    await leases_other.release_all()


class Gate:
    """A sleep that ends when the test opens the gate (the leases' wait to renew together)."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.parked = asyncio.Event()
        self.waiting = 0

    async def sleep(self, seconds: float) -> None:
        self.waiting += 1
        if not self.open.is_set():
            self.parked.set()
        await self.open.wait()

    async def stop(self) -> None:
        """Close the gate and wait until the leases' batches are parked at it (the batch
        under way, a store round trip, ends first)."""
        self.open.clear()
        self.parked.clear()
        async with asyncio.timeout(5):
            await self.parked.wait()


async def test_the_first_turn_takes_every_counts_lease_and_polls_renew_them_in_a_batch(
    two: tuple[Database, Database],
) -> None:
    """No store write per poll: a count's first turn takes the leases of all the instance's
    counts in one statement; the polls of held counts go ahead at once and their leases are
    renewed together once the wait to renew is over. Another instance's turns poll nothing."""
    a, b = two
    clock = FakeClock(T0)
    ids = [f"count-{i:03d}" for i in range(200)]
    gate = Gate()
    one, other = Instance("one"), Instance("other")
    leases_one = PollLeases(a, clock, one, sleep=gate.sleep)
    leases_other = PollLeases(b, clock, other, sleep=no_wait)
    polled: list[str] = []

    def poll(name: str) -> Poll:
        async def polls() -> object:
            polled.append(name)
            return None

        return polls

    guards = [leases_one.guard(c, 2, poll(f"one {c}")) for c in ids]
    others = [leases_other.guard(c, 2, poll(f"other {c}")) for c in ids]
    await guards[0]()  # the first turn: one statement for all 200
    assert one.counts == set(ids)
    async with a.connect() as conn:
        first = await leases.holders(conn, "poll:")
    assert {h for h, _ in first.values()} == {"one"}
    assert {u for _, u in first.values()} == {T0 + timedelta(seconds=7)}
    for guard in others:
        await guard()
    assert polled == [f"one {ids[0]}"]
    assert other.counts == set()
    clock.advance(2)
    for guard in guards:  # every count's turn: each polls at once, no lease written yet
        await guard()
    clock.advance(2)  # past half the lease's 7 s: due for renewal
    for guard in guards:
        await guard()
    assert polled[1:] == [f"one {c}" for c in ids] * 2
    async with a.connect() as conn:
        assert await leases.holders(conn, "poll:") == first
    gate.open.set()  # the wait to renew is over: one batch renews them all
    async with asyncio.timeout(5):
        while True:
            async with a.connect() as conn:
                renewed = await leases.holders(conn, "poll:")
            if renewed != first:
                break
            await asyncio.sleep(0)  # the batch runs in the background
    assert renewed == {f"poll:{c}": ("one", T0 + timedelta(seconds=11)) for c in ids}
    await leases_one.release_all()
    async with a.connect() as conn:
        assert await leases.holders(conn, "poll:") == {}
    await leases_other.release_all()


async def test_leases_are_taken_while_every_pooled_connection_is_busy(
    two: tuple[Database, Database],
) -> None:
    """The leases have connections of their own: a burst of other work holding every pooled
    connection (the first tallies of many counts at start) does not hold up the leases."""
    a, _ = two
    busy = asyncio.Event()
    release = asyncio.Event()
    held = 0

    async def hold() -> None:
        nonlocal held
        async with a.begin():
            held += 1
            if held == 15:  # SQLAlchemy's pool: 5, and 10 more when busy
                busy.set()
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(15)]
    async with asyncio.timeout(10):
        await busy.wait()
    instance = Instance("one")
    polls = PollLeases(a, FakeClock(T0), instance, sleep=no_wait)
    polled: list[str] = []

    async def poll() -> object:
        polled.append("bessemer-2021")
        return None

    async with asyncio.timeout(5):  # a pooled connection would be free after 30 s at best
        await polls.guard("bessemer-2021", 2, poll)()
    assert polled == ["bessemer-2021"]
    assert instance.counts == {"bessemer-2021"}
    release.set()
    await asyncio.gather(*holders)
    await polls.release_all()


async def test_a_reading_made_as_the_lease_lapsed_is_dropped_not_rejected(
    two: tuple[Database, Database],
) -> None:
    """A busy instance whose lease lapsed while its poll was under way drops what it read: the
    new holder's newer tally is already stored, and the older one would be rejected as going
    down, with a false alarm to the admins."""
    a, b = two
    clock = FakeClock(T0)
    async with a.begin() as conn:
        await count_rows.upsert(conn, bessemer())
    one, other = Instance("one"), Instance("other")
    leases_one = PollLeases(a, clock, one, sleep=no_wait)
    leases_other = PollLeases(b, clock, other, sleep=no_wait)
    source_one, source_other = FakeSource(), FakeSource()

    class Slow(FakeSource):
        async def fetch(self) -> Tally | None:
            # "one" stalls past its lease; "other" takes the count over and stores 85.
            clock.advance(30)
            source_other.set(tally(85, 201))
            await guard_other()
            return await source_one.fetch()

    def poller(db: Database, source: FakeSource, leases_of: PollLeases) -> Poller:
        health = SourceHealth(clock)
        holds = partial(leases_of.holds, "bessemer-2021")
        return Poller("bessemer-2021", source, Pipeline(db, clock), health, holds=holds)

    slow = Slow()
    poll_one = poller(a, slow, leases_one)
    guard_one = leases_one.guard("bessemer-2021", 15, poll_one.poll)
    guard_other = leases_other.guard(
        "bessemer-2021", 15, poller(b, source_other, leases_other).poll
    )
    source_one.set(tally(84, 201))
    async with slow, source_one, source_other:
        assert await guard_one() is PollResult.LEASE_LOST
    async with b.connect() as conn:
        stored = await tally_rows.history(conn, "bessemer-2021")
        assert [(t.seq, t.votes["yes"]) for t in stored] == [(1, 85)]
        assert await tally_rows.rejected(conn, "bessemer-2021") == []
    assert other.counts == {"bessemer-2021"}
    await leases_one.release_all()
    await leases_other.release_all()


async def test_a_turn_that_comes_while_its_lease_is_being_taken_waits_for_that_batch(
    db: Database,
) -> None:
    """At start the first turn takes every count's lease in one batch; a count whose first turn
    comes while that batch is under way polls when it ends, not a batch later (``renew_every``
    on: the first polls, spread over the interval, bunched behind the second batch)."""
    clock = FakeClock()
    gate, never = asyncio.Event(), asyncio.Event()

    async def between_batches(seconds: float) -> None:
        await never.wait()  # no second batch

    class Slow(Holder):
        async def take(
            self, wanted: Iterable[Lease], conn: AsyncConnection | None = None
        ) -> set[str]:
            await gate.wait()  # the store answers once the second turn has come
            return await super().take(wanted, conn)

    leases_of = PollLeases(db, clock, Instance("one"), sleep=between_batches)
    if not leases_of.shared:
        pytest.skip("one instance on SQLite: no lease")
    leases_of.holder = Slow(db, "one", clock)
    polled: list[str] = []

    async def poll(name: str) -> None:
        polled.append(name)

    turn_a = leases_of.guard("a", 15, partial(poll, "a"))
    turn_b = leases_of.guard("b", 15, partial(poll, "b"))
    first = asyncio.ensure_future(turn_a())
    for _ in range(5):
        await asyncio.sleep(0)  # the batch of "a" and "b" waits for the store
    second = asyncio.ensure_future(turn_b())
    for _ in range(5):
        await asyncio.sleep(0)
    gate.set()
    async with asyncio.timeout(10):
        await asyncio.gather(first, second)
    assert sorted(polled) == ["a", "b"]
    never.set()
    await leases_of.release_all()


async def test_a_turn_waits_for_its_lease_at_most_its_counts_interval(db: Database) -> None:
    """A store that does not answer the batch taking the leases does not hold a count's turn up
    for longer than the count's interval (by the loop's time): the turn is skipped, not
    polled."""
    clock, timers = FakeClock(), Timers()
    answer = asyncio.Event()

    class Silent(Holder):
        async def take(
            self, wanted: Iterable[Lease], conn: AsyncConnection | None = None
        ) -> set[str]:
            await answer.wait()
            return await super().take(wanted, conn)

    leases_of = PollLeases(db, clock, Instance("one"), sleep=no_wait, later=timers)
    if not leases_of.shared:
        pytest.skip("one instance on SQLite: no lease")
    leases_of.holder = Silent(db, "one", clock)
    polled: list[str] = []

    async def poll() -> None:
        polled.append("a")

    turn = asyncio.ensure_future(leases_of.guard("a", 15, poll)())
    for _ in range(5):
        await asyncio.sleep(0)
    assert [delay for delay, _ in timers.set] == [15]
    assert not turn.done()
    timers.fire()  # 15 s on the loop's clock
    async with asyncio.timeout(5):
        assert await turn is None
    assert polled == []
    again = asyncio.ensure_future(leases_of.guard("a", 15, poll)())
    for _ in range(5):
        await asyncio.sleep(0)
    assert [delay for delay, _ in timers.set] == [15]
    answer.set()  # the store answers before the interval is out
    async with asyncio.timeout(5):
        await again
    assert polled == ["a"]
    assert timers.set == []  # its timer called off: none left behind per turn
    await leases_of.release_all()
