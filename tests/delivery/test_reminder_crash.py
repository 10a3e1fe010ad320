"""A reminder survives kill -9 (issue 30): the real bot (``tallybot run``, a subprocess) on a
SQLite store, against the Discord and Slack fakes (``crash_run``).

The count is paused with its restart scheduled 15 minutes and 30 seconds ahead, so its
reminder falls due 30 seconds in (the bot looks every 5 s); two channels, one on each
platform, hear ``remind``. The bot is killed with SIGKILL before the reminder is due, started
again, killed again as soon as the reminder reached the first channel (the second's perhaps on
its way), and started again with the restart moved: every channel ends with the reminder once,
and with the reminder that says the time moved once. (Restarts an hour later, and two
instances on PostgreSQL, with an injected clock: ``tests/runtime/test_reminders.py``.)
"""

from __future__ import annotations

import json
import os
import signal
from datetime import timedelta
from pathlib import Path

import pytest

from bot.base.clock import SystemClock
from bot.domain.model import TallyState
from bot.domain.schedule import Schedule, When
from bot.domain.subscription import ChannelRef, Platform, Wants
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import subscriptions as sub_rows
from tests.delivery.crash_run import either, fakes, start_bot, stop, write_config
from tests.helpers import bessemer, tally

pytestmark = pytest.mark.slow  # real processes, a reminder due in real time

SCALE = 40
REMINDER = "The count resumes in"
MOVED = "The count's restart moved"
PAUSED = "No union leads by 637"


@pytest.mark.timeout(300)
async def test_a_reminder_survives_kill_9_and_goes_once(tmp_path: Path) -> None:
    d, s = fakes(SCALE)
    async with d, s:
        guild = d.add_guild("Bessemer organisers")
        d_chan = d.add_channel(guild, "count")
        s_chan = s.add_channel("count")
        store_url = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
        config = tmp_path / "tallybot.toml"
        write_config(config, store_url, guild, d, s, SCALE)
        clock = SystemClock()
        async with Database(store_url) as db:
            async with db.begin() as conn:
                await count_rows.upsert(conn, bessemer())
                for ref in (
                    ChannelRef(Platform("discord"), str(guild), str(d_chan)),
                    ChannelRef(Platform("slack"), s.team_id, s_chan),
                ):
                    wants = Wants.from_words("events remind")
                    await sub_rows.subscribe(
                        conn, ref, "bessemer-2021", wants, by="t", at=clock.now()
                    )
            await Pipeline(db, clock).ingest(tally(463, 1100, state=TallyState.PAUSED))
            at = clock.now() + timedelta(minutes=15, seconds=30)
            async with db.begin() as conn:
                await schedule_rows.put(
                    conn, Schedule("bessemer-2021", When.RESUMES, at), by="t", at=clock.now()
                )

        def said(words: str) -> tuple[int, int]:
            on_d = sum(words in json.dumps(m.embeds) for m in d.messages(d_chan))
            on_s = sum(words in json.dumps(m.blocks) for m in s.messages(s_chan))
            return on_d, on_s

        env = {
            **{k: v for k, v in os.environ.items() if "PROXY" not in k.upper()},
            "DISCORD_TOKEN": d.token,
            "SLACK_BOT_TOKEN": s.bot_token,
            "SLACK_APP_TOKEN": s.app_token,
            "SLACK_SIGNING_SECRET": s.signing_secret,
        }
        log = tmp_path / "bot.log"
        runs = []
        try:
            runs.append(await start_bot(config, env, log))
            await either(d, s, lambda: said(PAUSED) == (1, 1), 120)
            assert said(REMINDER) == (0, 0)
            await stop(runs[-1], signal.SIGKILL)  # before the reminder is due

            runs.append(await start_bot(config, env, log))
            await either(d, s, lambda: sum(said(REMINDER)) >= 1, 120)
            await stop(runs[-1], signal.SIGKILL)  # mid fan-out of the reminder
            async with Database(store_url) as db:
                async with db.connect() as conn:
                    claimed = await schedule_rows.claimed(conn, "bessemer-2021")
                async with db.begin() as conn:  # the restart put back 10 seconds
                    await schedule_rows.put(
                        conn,
                        Schedule("bessemer-2021", When.RESUMES, at + timedelta(seconds=10)),
                        by="t",
                        at=clock.now(),
                    )
            assert [n for _, _, n in claimed] == [2]

            runs.append(await start_bot(config, env, log))
            await either(d, s, lambda: said(MOVED) == (1, 1) and said(REMINDER) == (1, 1), 180)
        except TimeoutError:
            raise AssertionError(log.read_text()[-3000:]) from None
        finally:
            for run in runs:
                await stop(run, signal.SIGKILL)
        assert said(REMINDER) == (1, 1)  # once each: not lost, not doubled
        assert said(MOVED) == (1, 1)
        assert said(PAUSED) == (1, 1)
