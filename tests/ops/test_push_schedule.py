"""A push that schedules its count (issue 30): ``resumes`` with a pause says when the count
resumes; the schedule is stored and audited; a bad time is a 422 and nothing is taken in;
``/readyz`` leaves a scheduled count's source unchecked before its time."""

from __future__ import annotations

from datetime import timedelta

from bot.domain.message import Message
from bot.domain.schedule import Schedule, When
from bot.store import audit as audit_rows
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows
from tests.ops.conftest import CHAN, POLLED, Bot

PAUSE = {
    "votes": {"yes": 463, "no": 1100},
    "challenged": 505,
    "received": 3215,
    "state": "paused",
    "resumes": "2021-04-09T09:00-05:00",
    "remind_before": 30,
}


async def test_a_pushed_pause_says_when_the_count_resumes(bot: Bot) -> None:
    status, body = await bot.push(POLLED, PAUSE)
    assert status == 201, body
    await bot.app.idle()
    (paused,) = [m for m in bot.adapter.messages(CHAN) if isinstance(m, Message)]
    assert [str(n) for n in paused.notes][-1] == (
        "The count resumes at 9 Apr 2021 14:00 UTC (in 1 day 2 hours)."
    )
    async with bot.app.db.connect() as conn:
        stored = await schedule_rows.get(conn, POLLED)
        audit = await audit_rows.recent(conn, limit=5)
    assert stored is not None
    assert stored.at.isoformat() == "2021-04-09T14:00:00+00:00"
    assert stored.remind_before is not None
    assert stored.remind_before.total_seconds() == 1800
    assert [(a.actor, a.action) for a in audit] == [("push", "push"), ("push", "schedule")]


async def test_a_bad_time_is_a_422_and_nothing_is_taken_in(bot: Bot) -> None:
    for field, value, error in (
        ("resumes", "2021-04-01T09:00-05:00", "is in the past"),
        ("resumes", "2021-04-09T09:00", "has no time zone and none is configured"),
        ("resumes", "2021-04-09T09:00[Nowhere/Land]", "unknown time zone 'Nowhere/Land'"),
        ("starts", "2021-04-09T09:00Z", "not both"),
    ):
        status, body = await bot.push(POLLED, {**PAUSE, field: value})
        assert status == 422, body
        assert error in body["error"]
    final = {**PAUSE, "state": "final"}
    status, body = await bot.push(POLLED, final)
    assert (status, "a final count is not scheduled" in body["error"]) == (422, True)
    async with bot.app.db.connect() as conn:
        assert await schedule_rows.get(conn, POLLED) is None
        assert await tally_rows.history(conn, POLLED) == []


async def test_readyz_does_not_count_a_source_stale_before_its_count_starts(bot: Bot) -> None:
    poller = bot.app.pollers[POLLED]
    await poller.poll()
    async with bot.app.db.begin() as conn:  # it starts in an hour
        at = bot.clock.now() + timedelta(hours=1)
        await schedule_rows.put(conn, Schedule(POLLED, When.STARTS, at), by="t", at=at)
    bot.clock.advance(11 * 60)  # silent for longer than stale_after_minutes (10)
    status, body = await bot.get("/readyz")
    assert status == 200, body
    assert "source:bessemer-2021" not in body["checks"]
    bot.clock.advance(50 * 60)  # its time came: a silent source is stale again
    status, body = await bot.get("/readyz")
    assert status == 503
    assert body["problems"][0].startswith("source:bessemer-2021: source nlrb-feed is stale")
