"""A fan-out logs one info line, not one per channel (issue 13)."""

from __future__ import annotations

import logging

import pytest

from bot.delivery.worker import Dispatcher
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import subscriptions as sub_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.helpers import tally


async def no_sleep(seconds: float) -> None:
    return None


async def test_a_fan_out_logs_one_info_line_with_how_many_how_long_and_retries(
    sqlite_db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    channels = [ChannelRef(Platform("console"), "local", f"c{i}") for i in range(200)]
    async with sqlite_db.begin() as conn:
        for c in channels:
            await sub_rows.subscribe(conn, c, "bessemer-2021", Mode.EVENTS, by="t", at=clock.now())
    adapter = RecordingAdapter()
    adapter.transient_failures = 3
    dispatcher = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=no_sleep)
    await Pipeline(sqlite_db, clock).ingest(tally(84, 201))
    with caplog.at_level(logging.INFO, logger="bot.delivery.worker"):
        await dispatcher.drain(Platform("console"))
        clock.advance(600)
        await dispatcher.drain(Platform("console"))
    assert len(adapter.posted) == 200
    info = [r for r in caplog.records if r.levelno == logging.INFO]
    assert [r.name for r in info] == ["bot.delivery.worker.fanout"]
    assert info[0].getMessage() == (
        "fan-out of bessemer-2021 update #1 to console done in 600.0 s: 200 sent, 0 edited, "
        "0 gave up, 0 cancelled, 0 superseded; 3 retries, 0 rate limited"
    )
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 3  # each failed attempt still says what failed
