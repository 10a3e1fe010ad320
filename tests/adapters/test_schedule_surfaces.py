"""Scheduled counts through the real clients against the fakes (issue 30): the pause post says
when the count resumes, in each reader's own zone where the platform can (Discord
``<t:UNIX:f>``/``<t:UNIX:R>``, Slack ``<!date^UNIX^...>`` and how long as worded) and in the
configured zone where it cannot (Telegram, the console); the reminder reaches a channel that
hears ``remind`` once, and none that does not."""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path

import pytest

from bot.domain.model import TallyState
from bot.domain.schedule import Schedule, When
from bot.domain.subscription import Wants
from bot.domain.times import clock_time, unix
from bot.store import schedules as schedule_rows
from bot.store import subscriptions as sub_rows
from tests.adapters.contract import COUNT, RIGS, times_shown
from tests.adapters.rigs import Rig
from tests.helpers import tally


@pytest.fixture(params=list(RIGS))
def rig(request: pytest.FixtureRequest) -> Rig:
    return RIGS[request.param]()


async def test_the_pause_says_when_it_resumes_and_the_reminder_comes_once(
    rig: Rig, tmp_path: Path
) -> None:
    async with rig.run(tmp_path):
        reminded, quiet = rig.channels
        now = rig.clock.now()
        at = now + timedelta(hours=10)
        async with rig.app.db.begin() as conn:
            for channel, words in ((reminded, "events remind"), (quiet, "events")):
                await sub_rows.subscribe(
                    conn, channel, COUNT, Wants.from_words(words), by="t", at=now
                )
            await schedule_rows.put(conn, Schedule(COUNT, When.RESUMES, at), by="t", at=now)
        await rig.app.pipeline.ingest(tally(463, 1100, challenged=505, received=3215))
        await rig.app.pipeline.ingest(
            tally(463, 1100, challenged=505, received=3215, state=TallyState.PAUSED)
        )
        await rig.settle()
        paused = rig.seen(reminded)[-1].text
        assert "Count paused: No union leads by 637" in paused
        if rig.name == "discord":
            assert f"The count resumes at <t:{unix(at)}:f> (<t:{unix(at)}:R>)." in paused
        elif rig.name == "slack":
            assert f"<!date^{unix(at)}^{{date_short_pretty}} at {{time}}|" in paused
            assert "\nin 10 hours\n" in paused  # {ago} is documented for times past only
        else:  # the configured zone (UTC here), and how long, as worded
            assert f"The count resumes at {clock_time(at, UTC)} (in 10 hours)." in " ".join(
                paused.split()
            )
        rig.advance((at - rig.clock.now()).total_seconds() - 15 * 60)
        assert await rig.app.reminders.tick() == 1  # the one channel that hears remind
        assert await rig.app.reminders.tick() == 0
        await rig.settle()
        assert times_shown(rig, reminded, "The count resumes in 15 minutes") == 1
        if rig.name != "console":  # a terminal: both channels print to it
            assert times_shown(rig, quiet, "The count resumes in 15 minutes") == 0
        await rig.restart()  # a new instance on the same store: nothing sent twice
        assert await rig.app.reminders.tick() == 0
        await rig.settle()
        assert times_shown(rig, reminded, "The count resumes in 15 minutes") == 1
