"""Reminders before a scheduled restart: queued exactly once through the outbox, on SQLite and
PostgreSQL, whatever restarts, crashes or second instances come between; a changed time reminds
again, saying so; a count that resumed early is not reminded."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.delivery.reminders import Reminders
from bot.delivery.worker import Dispatcher
from bot.domain.message import Message
from bot.domain.model import TallyState
from bot.domain.schedule import Schedule, When
from bot.domain.subscription import ChannelRef, Hear, Platform, Wants
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import subscriptions as sub_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.helpers import bessemer, tally

CONSOLE = Platform("console")
REMIND = ChannelRef(CONSOLE, "local", "remind")
BOTH = ChannelRef(CONSOLE, "local", "calls-and-remind")
QUIET = ChannelRef(CONSOLE, "local", "events-only")
HOUR = 3600.0


async def no_sleep(seconds: float) -> None:
    return None


async def paused_with_schedule(db: Database, clock: FakeClock, in_hours: float = 3) -> Schedule:
    """Bessemer paused overnight at 1,100 No to 463 Yes, resuming ``in_hours`` from now;
    three channels: two hear remind, one does not."""
    async with db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
        for channel, words in ((REMIND, "remind"), (BOTH, "calls remind"), (QUIET, "events")):
            await sub_rows.subscribe(
                conn, channel, "bessemer-2021", Wants.from_words(words), by="t", at=clock.now()
            )
    await Pipeline(db, clock).ingest(tally(463, 1100, state=TallyState.PAUSED))
    at = clock.now() + timedelta(hours=in_hours)
    async with db.begin() as conn:
        return await schedule_rows.put(
            conn, Schedule("bessemer-2021", When.RESUMES, at), by="t", at=clock.now()
        )


async def delivered(db: Database, clock: FakeClock) -> RecordingAdapter:
    """Everything queued, delivered through the real dispatcher to a recording adapter."""
    adapter = RecordingAdapter()
    dispatcher = Dispatcher(db, {CONSOLE: adapter}, clock, sleep=no_sleep)
    await dispatcher.drain(CONSOLE)
    return adapter


def reminders_in(adapter: RecordingAdapter, channel: ChannelRef) -> list[str]:
    return [
        m.headline
        for m in adapter.messages(channel)
        if isinstance(m, Message) and "reminder" in m.events
    ]


async def test_a_reminder_survives_a_restart_an_hour_later_and_goes_once(
    db: Database, clock: FakeClock
) -> None:
    await paused_with_schedule(db, clock, in_hours=3)
    first = Reminders(db, clock)
    assert await first.tick() == 0  # not due yet; then the instance is killed (-9): no state
    clock.advance(HOUR)  # restarted an hour later: a new instance, the same store
    restarted = Reminders(db, clock)
    assert await restarted.tick() == 0
    clock.advance(HOUR + 45 * 60)  # 15 minutes before the restart
    assert await restarted.tick() == 2  # the two channels that hear remind
    assert await restarted.tick() == 0
    assert await Reminders(db, clock).tick() == 0  # another restart: already queued
    clock.advance(60)
    assert await restarted.tick() == 0
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, REMIND) == ["The count resumes in 15 minutes"]
    assert reminders_in(adapter, BOTH) == ["The count resumes in 15 minutes"]
    assert reminders_in(adapter, QUIET) == []
    async with db.connect() as conn:
        assert [(k, n) for k, _, n in await schedule_rows.claimed(conn, "bessemer-2021")] == [
            (When.RESUMES, 2)
        ]


async def test_a_crash_before_the_claim_commits_loses_nothing(
    db: Database, clock: FakeClock
) -> None:
    """The reminder's row and its deliveries are one transaction: killed before it commits,
    neither is there, and the next instance queues it."""
    schedule = await paused_with_schedule(db, clock, in_hours=1)
    clock.advance(45 * 60)

    class Killed(Exception):
        pass

    async def claimed_then_killed() -> None:
        async with db.begin() as conn:
            queued = await schedule_rows.claim_reminder(conn, schedule, "{}", clock.now())
            assert queued is not None
            assert len(queued) == 2
            raise Killed  # the process dies before COMMIT

    with pytest.raises(Killed):
        await claimed_then_killed()
    async with db.connect() as conn:
        assert await schedule_rows.claimed(conn, "bessemer-2021") == []
    assert await Reminders(db, clock).tick() == 2
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, REMIND) == ["The count resumes in 15 minutes"]


async def test_two_instances_on_one_store_queue_it_once(
    db: Database, store_url: str, store_schema: str | None, clock: FakeClock
) -> None:
    await paused_with_schedule(db, clock, in_hours=1)
    clock.advance(45 * 60)
    async with (
        Database(store_url, schema=store_schema) as one,
        Database(store_url, schema=store_schema) as two,
    ):
        counts = await asyncio.gather(*(Reminders(d, clock).tick() for d in (one, two, one, two)))
    assert sorted(counts) == [0, 0, 0, 2]
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, REMIND) == ["The count resumes in 15 minutes"]
    assert reminders_in(adapter, BOTH) == ["The count resumes in 15 minutes"]


async def test_a_changed_time_reminds_again_saying_it_moved(db: Database, clock: FakeClock) -> None:
    schedule = await paused_with_schedule(db, clock, in_hours=1)
    clock.advance(45 * 60)
    reminders = Reminders(db, clock)
    assert await reminders.tick() == 2
    async with db.begin() as conn:  # the restart is put back an hour
        moved = await schedule_rows.put(
            conn,
            Schedule("bessemer-2021", When.RESUMES, schedule.at + timedelta(hours=1)),
            by="t",
            at=clock.now(),
        )
    assert moved.moved_from == schedule.at
    assert await reminders.tick() == 0
    clock.advance(HOUR)
    assert await reminders.tick() == 2
    assert await reminders.tick() == 0
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, REMIND) == [
        "The count resumes in 15 minutes",
        "The count's restart moved: it resumes in 15 minutes",
    ]
    last = adapter.messages(REMIND)[-1]
    assert isinstance(last, Message)
    assert [str(n) for n in last.notes] == [
        "It resumes at 8 Apr 2021 14:00 UTC (it was to resume at 8 Apr 2021 13:00 UTC)."
    ]


async def test_no_reminder_when_it_resumed_early_or_the_time_went_by(
    db: Database, clock: FakeClock
) -> None:
    await paused_with_schedule(db, clock, in_hours=1)
    clock.advance(2 * HOUR)  # no instance ran through the reminder and the restart
    assert await Reminders(db, clock).tick() == 0  # "resumes in -45 minutes" is never sent
    async with db.begin() as conn:
        await schedule_rows.put(
            conn,
            Schedule("bessemer-2021", When.RESUMES, clock.now() + timedelta(minutes=10)),
            by="t",
            at=clock.now(),
        )
    await Pipeline(db, clock).ingest(tally(470, 1110))  # it resumed early
    assert await Reminders(db, clock).tick() == 0


async def test_a_late_reminder_says_how_long_is_really_left(db: Database, clock: FakeClock) -> None:
    await paused_with_schedule(db, clock, in_hours=1)
    clock.advance(52 * 60)  # the instance came back 7 minutes after the reminder was due
    assert await Reminders(db, clock).tick() == 2
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, REMIND) == ["The count resumes in 8 minutes"]


async def test_the_lead_is_the_counts_or_the_configured(db: Database, clock: FakeClock) -> None:
    schedule = await paused_with_schedule(db, clock, in_hours=2)
    async with db.begin() as conn:
        await schedule_rows.put(
            conn,
            Schedule(schedule.count_id, schedule.kind, schedule.at, timedelta(hours=1)),
            by="t",
            at=clock.now(),
        )
    clock.advance(HOUR - 60)
    assert await Reminders(db, clock, lead=timedelta(minutes=5)).tick() == 0
    clock.advance(60)
    assert await Reminders(db, clock, lead=timedelta(minutes=5)).tick() == 2
    async with db.begin() as conn:  # no lead of its own: the configured one
        await schedule_rows.put(
            conn, Schedule(schedule.count_id, schedule.kind, schedule.at), by="t", at=clock.now()
        )
    assert (await schedule_rows_get(db)).lead(timedelta(minutes=5)) == timedelta(minutes=5)


async def schedule_rows_get(db: Database) -> Schedule:
    async with db.connect() as conn:
        found = await schedule_rows.get(conn, "bessemer-2021")
    assert found is not None
    return found


def test_remind_is_heard_only_by_those_that_ask() -> None:
    assert Wants.from_words("remind").hears == {Hear.REMIND}
    assert not Wants().reminds


async def test_a_follow_that_hears_remind_gets_it_by_dm_once(
    db: Database, clock: FakeClock
) -> None:
    """``follow <count> remind``: the reminder goes to the person's DM channel, once, besides
    the channels that hear remind; a follow without remind gets none."""
    from tests.runtime.test_follow import commands as follow_commands
    from tests.runtime.test_follow import dm, person

    await paused_with_schedule(db, clock, in_hours=1)
    c = follow_commands(db, clock)
    reply = await c.handle(person("follow bessemer-2021 calls remind", "7"))
    assert reply.ok, reply.text
    assert "a reminder before the count starts or resumes" in reply.text
    assert (await c.handle(person("follow bessemer-2021", "8"))).ok
    clock.advance(45 * 60)
    assert await Reminders(db, clock).tick() == 3  # two channels and one person
    assert await Reminders(db, clock).tick() == 0
    adapter = await delivered(db, clock)
    assert reminders_in(adapter, dm("7")) == ["The count resumes in 15 minutes"]
    assert reminders_in(adapter, dm("8")) == []
