"""Two apps in one process (tests, a worker of pytest-xdist) share nothing that runs: each has
the processes its charts are drawn in and the count of its commands under way, so one stopped
leaves the other charting and answering."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.charts import chart
from bot.charts.process import ChartProcess
from bot.commands.inflight import InFlight
from bot.commands.request import Request
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.runtime.plugins import context
from bot.settings.loader import parse
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests import charts
from tests.helpers import bessemer, tally
from tests.runtime.test_app import no_sleep

CONSOLE = Platform("console")
BESSEMER = {
    "id": "bessemer-2021",
    "title": "Amazon BHM1 union election, Bessemer AL",
    "rule": "majority",
    "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
}


def app_on(tmp_path: Path, name: str, clock: FakeClock) -> App:
    store = f"sqlite+aiosqlite:///{tmp_path / name / 'tallybot.sqlite3'}"
    cfg = parse(
        {
            "store": {"url": store},
            "console": {"enabled": True},
            "counts": [{**BESSEMER, "source": {"kind": "manual", "name": "admins"}}],
        },
        tmp_path / name / "tallybot.toml",
    )
    adapter = RecordingAdapter()
    own = ChartProcess()  # as in a bot (the tests' apps share the run's: tests/conftest.py)
    return App(
        cfg, {Platform("console"): lambda commands: adapter}, clock=clock, sleep=no_sleep,
        poll=False, chart_process=own,
    )  # fmt: skip


@pytest.mark.timeout(120)  # two chart processes start (matplotlib is not imported: fake)
async def test_one_app_stopped_leaves_the_other_charting_and_answering(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chart, "render_chart", charts.fake)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = app_on(tmp_path, "a", clock), app_on(tmp_path, "b", clock)
    assert first.chart_process is not second.chart_process
    async with second:
        async with first:
            for app in (first, second):
                png = await app.charts.get_or_render(bessemer(), [tally(463, 1100, seq=1)])
                assert png == b"png Amazon BHM1 union election, Bessemer AL 1"
            drawn_by_first = first.chart_process.pid
            assert drawn_by_first not in (None, second.chart_process.pid)
            # commands under way in the first, as many as it takes: none has room there
            ctx_first = context(first.config, CONSOLE, first.commands)
            ctx_second = context(second.config, CONSOLE, second.commands)
            assert ctx_first.backlog is first.commands.backlog
            flood = InFlight(backlog=ctx_first.backlog).order
            where = ChannelRef(CONSOLE, "local", "news")
            places = []
            while flood.room(where):
                places.append(flood.place(len(places), where))
            assert InFlight(backlog=ctx_second.backlog).order.room(where)
            for place in places:
                place.leave()
        assert first.chart_process.pid is None  # its children ended with it
        png = await second.charts.get_or_render(bessemer(), [tally(738, 1798, seq=2)])
        assert png == b"png Amazon BHM1 union election, Bessemer AL 2"
        assert second.chart_process.pid not in (None, drawn_by_first)
        answer = await second.commands.handle(Request(where, "u", "u", "list", home=True))
        assert answer.ok, answer.text
        assert "bessemer-2021" in answer.text
    assert second.chart_process.pid is None
