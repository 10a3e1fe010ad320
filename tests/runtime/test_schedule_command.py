"""``schedule``: admins only, audited; one-line errors (a time in the past, an offset or zone
that does not exist, a naive time with no zone configured, a final count); ``status`` and the
pause post say when the count resumes."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.commands.handler import Commands
from bot.domain.message import Message
from bot.domain.model import TallyState
from bot.domain.render_text import render
from bot.domain.schedule import When
from bot.domain.subscription import Mode
from bot.errors import ConfigError
from bot.ingest.pipeline import Pipeline
from bot.runtime.app import App
from bot.settings.loader import Config, parse
from bot.store import Database
from bot.store import audit as audit_rows
from bot.store import schedules as schedule_rows
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.adapters.rigs.base import count_table
from tests.helpers import tally
from tests.runtime.test_commands import CHAN, admin, roomy, user

CHICAGO = ZoneInfo("America/Chicago")


def commands(db: Database, clock: FakeClock, **kw: object) -> Commands:
    return Commands(db, Pipeline(db, clock), clock, throttle=roomy(clock), **kw)  # type: ignore[arg-type]


async def test_an_admin_schedules_and_it_is_audited(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    reply = await c.handle(admin("schedule bessemer-2021 resumes=2021-04-09T09:00-05:00"))
    assert reply.ok, reply.text
    assert reply.text == (
        "Scheduled: bessemer-2021. The count resumes at 9 Apr 2021 14:00 UTC (in 1 day 2 hours)."
        " Channels that hear remind get a reminder 15 minutes before."
    )
    async with sqlite_db.connect() as conn:
        stored = await schedule_rows.get(conn, "bessemer-2021")
        (entry,) = await audit_rows.recent(conn, limit=1)
    assert stored is not None
    assert stored.kind is When.RESUMES
    assert stored.at.isoformat() == "2021-04-09T14:00:00+00:00"
    assert (entry.action, entry.actor) == ("schedule", "discord:42 (ana)")
    assert entry.count_id == "bessemer-2021"
    assert entry.new == "resumes 2021-04-09T14:00:00+00:00"
    shown = await c.handle(admin("schedule bessemer-2021"))
    assert shown.text.startswith("bessemer-2021: The count resumes at 9 Apr 2021 14:00 UTC")
    lead = await c.handle(admin("schedule bessemer-2021 remind=1h"))
    assert lead.text.endswith("a reminder 1 hour before.")
    cleared = await c.handle(admin("schedule bessemer-2021 clear"))
    assert cleared.text == "bessemer-2021 has no scheduled time now."
    async with sqlite_db.connect() as conn:
        assert await schedule_rows.get(conn, "bessemer-2021") is None
        assert len(await audit_rows.recent(conn, limit=10)) == 3


async def test_only_admins_schedule(sqlite_db: Database, clock: FakeClock) -> None:
    reply = await commands(sqlite_db, clock).handle(
        user("schedule bessemer-2021 resumes=2021-04-09T09:00-05:00")
    )
    assert not reply.ok
    assert "only" in reply.text
    assert "admin" in reply.text


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        ("resumes=2021-04-01T09:00-05:00", "2021-04-01T09:00-05:00 is in the past"),
        ("resumes=2021-04-09T09:00+15:00", "no place is more than 14 hours from UTC"),
        ("starts=2021-04-09T09:00[Mars/Olympus]", "unknown time zone 'Mars/Olympus'"),
        ("resumes=2021-04-09T09:00", "has no time zone and none is configured"),
        ("resumes=tomorrow", "'tomorrow' is not a time: write it like 2021-04-08T13:00-05:00"),
        ("starts=2021-04-09T09:00Z resumes=2021-04-09T10:00Z", "give starts= or resumes="),
        ("resumes=2021-04-09T09:00Z remind=0", "remind=0: from 1 minute to 24 hours before"),
        ("remind=15", "nothing is scheduled: give starts= or resumes= first"),
        ("resumes=2021-04-09T09:00Z clear", "usage: schedule <count>"),
        ("resumes=2023-04-09T09:00Z", "more than a year ahead"),
    ],
)
async def test_bad_times_are_one_line_errors(
    sqlite_db: Database, clock: FakeClock, typed: str, error: str
) -> None:
    reply = await commands(sqlite_db, clock).handle(admin(f"schedule bessemer-2021 {typed}"))
    assert not reply.ok
    assert error in reply.text
    assert "\n" not in reply.text
    async with sqlite_db.connect() as conn:
        assert await schedule_rows.get(conn, "bessemer-2021") is None


async def test_a_time_a_clock_change_skips_does_not_exist(
    sqlite_db: Database, clock: FakeClock
) -> None:
    clock.advance(-40 * 86400)  # early March 2021: Chicago springs forward on the 14th
    c = commands(sqlite_db, clock, zone=CHICAGO)
    gap = await c.handle(admin("schedule bessemer-2021 starts=2021-03-14T02:30"))
    assert "2021-03-14T02:30 does not exist in America/Chicago (the clocks skip" in gap.text
    assert not gap.ok
    local = await c.handle(admin("schedule bessemer-2021 starts=2021-03-14T03:30"))
    assert local.ok, local.text  # the configured zone: 03:30 CDT is 08:30 UTC
    async with sqlite_db.connect() as conn:
        stored = await schedule_rows.get(conn, "bessemer-2021")
    assert stored is not None
    assert stored.at.isoformat() == "2021-03-14T08:30:00+00:00"


async def test_a_final_count_is_not_scheduled(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    figures = "yes=738 no=1798 void=76 challenged=505 received=3117"
    assert (await c.handle(admin(f"final bessemer-2021 {figures}"))).ok
    reply = await c.handle(admin("schedule bessemer-2021 resumes=2021-04-09T09:00Z"))
    assert not reply.ok
    assert "bessemer-2021 is final: a final count is not scheduled" in reply.text


async def test_status_and_the_pause_post_say_when_it_resumes(
    sqlite_db: Database, clock: FakeClock
) -> None:
    """Bessemer paused overnight at 1,100 No to 463 Yes, resuming at 9:00 a.m. (Chicago)."""
    clock.advance(16 * 3600)  # 8 Apr 2021 23:00 CDT
    async with sqlite_db.begin() as conn:
        await sub_rows.subscribe(conn, CHAN, "bessemer-2021", Mode.EVENTS, by="t", at=clock.now())
    c = commands(sqlite_db, clock, zone=CHICAGO)
    assert (await c.handle(admin("schedule bessemer-2021 resumes=2021-04-09T09:00"))).ok
    await Pipeline(sqlite_db, clock).ingest(tally(463, 1100))
    await Pipeline(sqlite_db, clock).ingest(tally(463, 1100, state=TallyState.PAUSED))
    async with sqlite_db.connect() as conn:
        from bot.store import outbox

        due = await outbox.due(conn, CHAN.platform, now=clock.now(), limit=10)
    paused = Message.from_json(due[-1].payload)
    text = render(paused, CHICAGO)
    assert paused.headline == "Count paused: No union leads by 637"
    assert "The count resumes at 9 Apr 2021 09:00 CDT (in 10 hours)." in text
    status = await c.handle(user("status bessemer-2021"))
    assert status.message is not None
    assert "The count resumes at 9 Apr 2021 09:00 CDT (in 10 hours)." in render(
        status.message, CHICAGO
    )


def configured(tmp_path: Path, **count: object) -> Config:
    table = {**count_table(), **count}
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "defaults": {"timezone": "America/Chicago", "remind_before": 20},
            "counts": [table],
        },
        tmp_path / "tallybot.toml",
    )


async def test_the_configuration_file_schedules_a_count(tmp_path: Path) -> None:
    clock = FakeClock()  # 8 Apr 2021 12:00 UTC
    cfg = configured(tmp_path, resumes=datetime(2021, 4, 9, 9, 0, tzinfo=CHICAGO))
    assert cfg.remind_before == timedelta(minutes=20)
    async with App(cfg, {}, clock=clock, poll=False) as app, app.db.connect() as conn:
        stored = await schedule_rows.get(conn, "bessemer-2021")
    assert stored is not None
    assert (stored.kind, stored.at.isoformat()) == (When.RESUMES, "2021-04-09T14:00:00+00:00")
    naive = configured(tmp_path, starts="2021-04-09T09:00", remind_before=5)  # in Chicago
    schedule = naive.counts[0].schedule
    assert schedule is not None
    assert schedule.at.isoformat() == "2021-04-09T14:00:00+00:00"
    assert schedule.remind_before == timedelta(minutes=5)


@pytest.mark.parametrize(
    ("keys", "error"),
    [
        ({"starts": "2021-04-09T09:00Z", "resumes": "2021-04-09T10:00Z"}, "not both"),
        ({"resumes": "2021-04-09T09:00[Moon/Base]"}, "unknown time zone 'Moon/Base'"),
        ({"resumes": "soon"}, "'soon' is not a time"),
        ({"remind_before": 0}, "remind_before"),
    ],
)
def test_a_bad_schedule_in_the_file_is_a_config_error(
    tmp_path: Path, keys: dict[str, object], error: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(error)):
        configured(tmp_path, **keys)


def test_the_schedule_words_doctests() -> None:
    """The words of ``bot.domain.schedule`` and the relative moments of ``message``."""
    import doctest

    import bot.domain.message
    import bot.domain.schedule
    import bot.domain.subscription

    for module in (bot.domain.schedule, bot.domain.message, bot.domain.subscription):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0
    assert doctest.testmod(bot.domain.schedule, optionflags=doctest.ELLIPSIS).attempted >= 25
