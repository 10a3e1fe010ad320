"""Shard leases: the instances of a PostgreSQL store divide a gateway's shards among themselves,
each runs its share, a shard handed on keeps its session until the new holder's is up, a dead
instance's shards are taken over once their leases expire, a lease lost means its session stops
first; SQLite runs them all. Session starts keep to one per bucket
per window across instances."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from bot.base.clock import SystemClock
from bot.cluster import Instance
from bot.cluster.shards import Change, SessionStarts, ShardLeases
from bot.delivery.pacing import Window
from bot.store import Database, notices
from bot.testing.clock import FakeClock
from tests.cluster.test_claims import two
from tests.conftest import PG_URL, _pg_execute

__all__ = ["two"]
T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)
LEASE_S = 9.0  # a round every 3 s
WAITING = text("SELECT count(*) FROM pg_locks WHERE NOT granted AND relation IS NOT NULL")


class Sessions:
    """The sessions each instance runs, as its ``start``/``stop`` see them: two of one shard
    only while it is handed over, and never a shard left without one by a hand-over."""

    def __init__(self) -> None:
        self.running: dict[int, list[str]] = {}
        self.log: list[tuple[str, str, int]] = []
        self.overlaps = 0
        self.gaps: list[int] = []
        """Shards whose last session a stop ended."""

    def of(self, name: str) -> tuple[Change, Change]:
        async def start(shard: int) -> None:
            names = self.running.setdefault(shard, [])
            assert name not in names, f"shard {shard} runs twice in {name}"
            self.overlaps += bool(names)
            names.append(name)
            self.log.append(("start", name, shard))

        async def stop(shard: int) -> None:
            self.running[shard].remove(name)
            if not self.running[shard]:
                del self.running[shard]
                self.gaps.append(shard)
            self.log.append(("stop", name, shard))

        return start, stop

    def held_by(self, name: str) -> set[int]:
        return {s for s, names in self.running.items() if name in names}

    def died(self, name: str) -> None:
        self.running = {s: [n for n in ns if n != name] for s, ns in self.running.items()}
        self.running = {s: ns for s, ns in self.running.items() if ns}


async def rounds(sessions: Sessions, *keepers: tuple[str, ShardLeases]) -> None:
    for name, keeper in keepers:
        start, stop = sessions.of(name)
        await keeper.step(start, stop)


async def test_instances_divide_the_shards_and_take_over_a_dead_ones(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    one, other = Instance("one"), Instance("other")
    ka = ShardLeases(a, clock, one, count=4, lease_seconds=LEASE_S)
    kb = ShardLeases(b, clock, other, count=4, lease_seconds=LEASE_S)
    sessions = Sessions()

    await rounds(sessions, ("one", ka))  # alone: all four
    assert sessions.held_by("one") == {0, 1, 2, 3} == one.shards
    await rounds(sessions, ("other", kb))  # present now, nothing free yet
    assert sessions.held_by("other") == set()
    clock.advance(3)
    await rounds(sessions, ("one", ka), ("other", kb))  # two instances: two shards each
    assert ka.held == {0, 1}
    assert sessions.held_by("other") == {2, 3}
    assert sessions.held_by("one") == {0, 1, 2, 3}  # handed on: served until the new are up
    assert one.shards == {0, 1, 2, 3}
    clock.advance(3)
    await rounds(sessions, ("other", kb), ("one", ka))  # other's are up: one lets them go
    assert sessions.held_by("one") == {0, 1}
    assert sessions.held_by("other") == {2, 3}
    assert other.shards == {2, 3}
    assert one.shards == {0, 1}
    assert sessions.gaps == []  # a guild was never without a session
    assert sessions.overlaps == 2
    for _ in range(3):  # stable
        clock.advance(3)
        await rounds(sessions, ("one", ka), ("other", kb))
    assert sessions.held_by("one") == {0, 1}
    assert sessions.held_by("other") == {2, 3}

    # "one" dies (no more rounds): its leases and its presence run out LEASE_S after its last
    # round; "other" takes its shards at its first round after that.
    died = clock.now()
    taken_at = None
    for _ in range(6):
        clock.advance(3)
        sessions.died("one")
        await rounds(sessions, ("other", kb))
        if sessions.held_by("other") == {0, 1, 2, 3}:
            taken_at = clock.now()
            break
    assert taken_at is not None
    assert (taken_at - died).total_seconds() <= LEASE_S + LEASE_S / 3


async def test_a_lease_taken_meanwhile_stops_its_session(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    ka = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    kb = ShardLeases(b, clock, Instance("other"), count=2, lease_seconds=LEASE_S)
    assert await ka.round() == ({0, 1}, set())
    clock.advance(LEASE_S + 1)  # "one" stalled past its leases; "other" takes them
    assert await kb.round() == ({0, 1}, set())
    assert await ka.round() == (set(), {0, 1})  # awake: lost, so its sessions stop
    assert ka.held == set()
    assert ka.instance.shards == set()


async def test_a_store_that_does_not_answer_stops_the_sessions_before_the_leases_run_out(
    two: tuple[Database, Database],
) -> None:
    """Held is judged by the leases' expiry, not by one round's success: failed rounds keep the
    sessions while the leases last (9 s, relied on for 8.1), and the last one stops them."""
    a, _ = two
    clock = FakeClock(T0)
    keeper = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    assert await keeper.round() == ({0, 1}, set())
    assert a.schema is not None
    await _pg_execute(PG_URL, f'DROP SCHEMA "{a.schema}" CASCADE')  # every statement fails now
    clock.advance(3)
    assert await keeper.round() == (set(), set())  # 5.1 s of the lease left: kept
    clock.advance(3.5)
    assert await keeper.round() == (set(), set())  # a failed round: still 1.6 s left, kept
    assert keeper.next_in() == pytest.approx(1.6)  # the next round comes before they lapse
    clock.advance(keeper.next_in())
    assert await keeper.round() == (set(), {0, 1})  # none left: stopped before 9 s
    assert keeper.held == set()


async def test_a_round_that_stalls_past_a_rounds_time_keeps_the_sessions_and_renews(
    two: tuple[Database, Database],
) -> None:
    """A busy store: the round's statements wait (here on a lock) past the round's own time
    (3 s); the sessions run on meanwhile, and the round renews their leases when it ends."""
    a, b = two
    clock = FakeClock(T0)
    sessions = Sessions()
    keeper = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    start, stop = sessions.of("one")
    await keeper.step(start, stop)
    assert sessions.held_by("one") == {0, 1}
    clock.advance(3)
    async with b.begin() as conn:
        await conn.execute(text("LOCK TABLE leases IN ACCESS EXCLUSIVE MODE"))
        stalled = asyncio.create_task(keeper.step(start, stop))
        async with asyncio.timeout(10):  # until the round's statement waits for the lock
            while not (await conn.execute(WAITING)).scalar():  # a round trip each time
                pass
        clock.advance(4)  # past a round's time, within the leases' 8.1 s
        assert not stalled.done()
    async with asyncio.timeout(10):
        await stalled
    assert sessions.held_by("one") == {0, 1} == keeper.held
    assert sessions.gaps == []
    assert keeper.left() == pytest.approx(LEASE_S * 0.9 - 4)  # from the stalled round's start
    clock.advance(3)
    assert await keeper.round() == (set(), set())  # renewed, not lapsed


async def test_fixed_shards_are_held_and_left_out_of_the_division(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    fixed = ShardLeases(a, clock, Instance("fixed"), count=4, fixed=(0,), lease_seconds=LEASE_S)
    auto = ShardLeases(b, clock, Instance("auto"), count=4, lease_seconds=LEASE_S)
    sessions = Sessions()
    await rounds(sessions, ("fixed", fixed), ("auto", auto))
    assert sessions.held_by("fixed") == {0}
    assert sessions.held_by("auto") == {1, 2, 3}
    clock.advance(3)
    await rounds(sessions, ("fixed", fixed), ("auto", auto))
    assert sessions.held_by("fixed") == {0}
    assert sessions.held_by("auto") == {1, 2, 3}
    await fixed.release_all()  # a clean stop hands shard 0 on at once
    sessions.running.pop(0)
    await rounds(sessions, ("auto", auto))
    assert sessions.held_by("auto") == {0, 1, 2, 3}


async def test_sqlite_runs_every_shard_without_leases(db: Database) -> None:
    instance = Instance("solo")
    keeper = ShardLeases(db, FakeClock(T0), instance, count=3, lease_seconds=LEASE_S)
    if keeper.shared:  # the PostgreSQL run of this test: the division above covers it
        assert await keeper.round() == ({0, 1, 2}, set())
        return
    assert await keeper.round() == ({0, 1, 2}, set())
    assert await keeper.round() == (set(), set())
    assert instance.shards == {0, 1, 2}
    assert keeper.next_in() == LEASE_S / 3  # no lease to lapse: rounds at their pace, no spin


async def test_session_starts_are_one_per_bucket_per_window_across_instances(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    window = Window(1, 0.5)  # the store's schedule, compressed: 0.5 s / 0.9 between starts
    one = SessionStarts("test", 2, SystemClock(), a, sleep=sleep, window=window)
    other = SessionStarts("test", 2, SystemClock(), b, sleep=sleep, window=window)
    await one.turn(0)  # bucket 0: at once
    await other.turn(1)  # bucket 1: at once
    assert slept == []
    await other.turn(2)  # bucket 0 again, from the other instance: waits its turn
    assert len(slept) == 1
    assert 0.4 < slept[0] <= 0.5 / 0.9 + 0.01
    assert (one.started, other.started) == (1, 2)


async def test_a_lease_lost_keeps_its_session_until_the_new_holders_is_up(
    two: tuple[Database, Database],
) -> None:
    """ "one" stalled past its leases and "other" took them: "one" serves the shards on until
    the other's sessions are marked up, so their guilds are never without a session."""
    a, b = two
    clock = FakeClock(T0)
    one, other = Instance("one"), Instance("other")
    ka = ShardLeases(a, clock, one, count=2, lease_seconds=LEASE_S)
    kb = ShardLeases(b, clock, other, count=2, lease_seconds=LEASE_S)
    sessions = Sessions()
    await rounds(sessions, ("one", ka))
    clock.advance(LEASE_S + 1)
    up: set[int] = set()
    kb.up = lambda shard: shard in up
    await rounds(sessions, ("other", kb))  # taken; its sessions are not up yet
    assert other.shards == set()
    await rounds(sessions, ("one", ka))  # lost: served on
    assert ka.held == set()
    assert sessions.held_by("one") == {0, 1} == one.shards
    up.update({0, 1})
    await rounds(sessions, ("other", kb), ("one", ka))  # marked up: "one" lets 0 go
    assert 0 not in sessions.held_by("one")
    for _ in range(2):  # "other" handed 1 back on (two instances): "one" runs it on
        clock.advance(3)
        await rounds(sessions, ("other", kb), ("one", ka))
    assert sessions.held_by("one") == {1} == one.shards
    assert sessions.held_by("other") == {0} == other.shards
    assert sessions.gaps == []


async def test_a_round_woken_late_renews_the_leases_instead_of_giving_them_up(
    two: tuple[Database, Database],
) -> None:
    """A busy process wakes its round after the leases' held time ran out (nobody took them):
    the round still waits for the store and renews them; the sessions never stop."""
    a, _ = two
    clock = FakeClock(T0)
    sessions = Sessions()
    keeper = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    await rounds(sessions, ("one", keeper))
    clock.advance(LEASE_S)  # past the 8.1 s relied on
    assert keeper.left() == 0
    await rounds(sessions, ("one", keeper))
    assert keeper.held == {0, 1} == sessions.held_by("one")
    assert keeper.left() == pytest.approx(LEASE_S * 0.9)
    assert sessions.log == [("start", "one", 0), ("start", "one", 1)]


async def test_a_woken_keeper_runs_its_round_at_once(two: tuple[Database, Database]) -> None:
    """A session that comes up wakes the rounds (its mark lets the old holder go) instead of
    waiting for the next round a third of the lease later."""
    a, _ = two
    clock = FakeClock(T0)
    sessions = Sessions()
    keeper = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    start, stop = sessions.of("one")

    async def never(seconds: float) -> None:
        await asyncio.Event().wait()

    running = asyncio.create_task(keeper.run(start, stop, sleep=never))
    try:
        await asyncio.sleep(0)
        assert sessions.log == []
        keeper.wake()
        for _ in range(1000):
            if sessions.log:
                break
            await asyncio.sleep(0.01)
        assert sessions.held_by("one") == {0, 1}
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running


async def test_a_stop_with_no_other_instance_there_does_not_wait_for_a_hand_over(
    two: tuple[Database, Database],
) -> None:
    """The whole fleet stopping: nobody will take the shards, so the stop ends their sessions
    at the first look (not after the hand-over's 6 s)."""
    a, _ = two
    clock = FakeClock(T0)
    sessions = Sessions()
    keeper = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    _, stop = sessions.of("one")
    await rounds(sessions, ("one", keeper))
    await asyncio.wait_for(keeper.hand_over_all(stop), timeout=2.0)
    assert sessions.running == {}


LISTENING = text("SELECT count(*) FROM pg_stat_activity WHERE query = :listen")


async def test_shards_handed_on_are_taken_at_once_by_an_instance_that_hears_of_it(
    two: tuple[Database, Database],
) -> None:
    """An instance stopping hands its shards on and says so (``NOTIFY``): another takes them at
    once, not at its next round (which here never comes: its rounds sleep for ever)."""
    a, b = two
    clock = FakeClock(T0)
    sessions = Sessions()
    ka = ShardLeases(a, clock, Instance("one"), count=2, lease_seconds=LEASE_S)
    kb = ShardLeases(b, clock, Instance("other"), count=2, lease_seconds=LEASE_S)
    await rounds(sessions, ("one", ka), ("other", kb))  # "one" has both, "other" is there
    assert kb.held == set()
    start, stop = sessions.of("other")

    async def never(seconds: float) -> None:
        await asyncio.Event().wait()

    running = asyncio.create_task(kb.run(start, stop, sleep=never))
    listen = f'LISTEN "{notices.channel(b.schema, notices.SHARDS)}"'
    try:
        for _ in range(500):  # until it listens
            async with b.connect() as conn:
                if (await conn.execute(LISTENING, {"listen": listen})).scalar():
                    break
            await asyncio.sleep(0.01)
        await ka.release_all()
        for _ in range(1000):
            if kb.held == {0, 1}:
                break
            await asyncio.sleep(0.01)
        assert kb.held == {0, 1}
    finally:
        running.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await running
