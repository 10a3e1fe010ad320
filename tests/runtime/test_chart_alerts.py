"""A chart that could not be drawn is told once per count, cause and hour (issue 27, part 6),
whichever instance saw it: two pipelines on one store (SQLite and PostgreSQL), each told of
the same count's charts failing, queue one alert per cause between them."""

from __future__ import annotations

from datetime import timedelta

from bot.charts.chart import FAILURE_WINDOW, failure_notice
from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import ChartError
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.testing.clock import FakeClock
from tests.helpers import bessemer

OPS = ChannelRef(Platform("console"), "local", "ops")


def test_the_notice_names_the_count_and_its_cause() -> None:
    count = bessemer()
    slow = failure_notice(count, ChartError("took too long", abandoned=True))
    died = failure_notice(count, ChartError("the chart process died"))
    broken = failure_notice(count, RuntimeError("no fonts"))
    assert slow.group == "chart|bessemer-2021|abandoned"
    assert died.group == broken.group == "chart|bessemer-2021|failed"
    assert slow.text.startswith("The chart of bessemer-2021 could not be drawn: it took too long")
    assert "(RuntimeError; the log says more)" in broken.text
    assert "no fonts" not in broken.text  # what drawing raised stays in the log


async def test_two_instances_tell_a_failing_chart_once_per_cause_and_window(
    db: Database,
) -> None:
    clock = FakeClock()
    async with db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
    a, b = (Pipeline(db, clock, alert_channels=[OPS], instance=i) for i in ("a", "b"))
    count = bessemer()
    slow = failure_notice(count, ChartError("slow", abandoned=True))
    broken = failure_notice(count, RuntimeError("no fonts"))
    for pipeline in (a, b, a, b):
        await pipeline.alert(slow, once_per=FAILURE_WINDOW)
        await pipeline.alert(broken, once_per=FAILURE_WINDOW)
        clock.advance(60)
    await a.alert(Notice("a source went stale", "bessemer-2021"))  # not grouped: told
    await a.alert(Notice("a source went stale", "bessemer-2021"))
    first = await _alerts(db, clock)
    clock.advance(FAILURE_WINDOW.total_seconds())
    await b.alert(slow, once_per=FAILURE_WINDOW)  # a new window
    later = await _alerts(db, clock)
    assert [n.group for n in first] == [slow.group, broken.group, None, None]
    assert [n.group for n in later[len(first) :]] == [slow.group]


async def _alerts(db: Database, clock: FakeClock) -> list[Notice]:
    async with db.connect() as conn:
        found = await outbox.alerts_since(conn, "bessemer-2021", clock.now() - timedelta(days=1))
    return [Notice.from_json(d.payload) for d in found]
