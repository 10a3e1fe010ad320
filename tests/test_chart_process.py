"""Charts are drawn in a child process (``bot.charts.process``): matplotlib stays out of the
bot's, a child that dies fails its chart and the next one gets a new child, and the child goes
away when no chart is asked for a while, or when the last app closes."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from PIL import Image

from bot.charts.chart import ChartCache, render_chart
from bot.charts.process import ChartProcess, Render
from bot.domain.chart_figure import HEIGHT_PX, WIDTH_PX
from bot.domain.model import Count
from bot.errors import ChartError
from bot.testing.clock import Timers
from tests.charts import fake, stuck
from tests.helpers import bessemer, tally

HISTORY = [tally(463, 1100, seq=1), tally(738, 1798, seq=2)]

RENDER_IN_A_FRESH_BOT = """
import asyncio, sys
from bot.charts.chart import ChartCache, chart_png
from bot.charts.process import ChartProcess
from tests.charts import fake, stuck
from tests.helpers import bessemer, tally

async def main() -> None:
    process = ChartProcess()
    cache = ChartCache(process=process)
    history = [tally(463, 1100, seq=1), tally(738, 1798, seq=2)]
    png = await chart_png(bessemer(), history, cache=cache)
    await process.aclose()
    sys.stdout.buffer.write(png)
    sys.stderr.write(f"matplotlib={'matplotlib' in sys.modules} PIL={'PIL' in sys.modules}")

asyncio.run(main())
"""


def gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (reaped, or a zombie nobody reaps), waiting up to 20 s
    for it."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)  # polling a real process, with a deadline
    return False


STARTED_BY_A_CONSOLE_SCRIPT = """
import re
import sys
from bot.runtime.cli import main
if __name__ == "__main__":
    import asyncio, os
    from bot.charts.process import ChartProcess
    from tests.charts import modules
    from tests.helpers import bessemer, tally

    async def draw() -> None:
        process = ChartProcess()
        seen = await process.draw(modules, bessemer(), [tally(463, 1100, seq=1)])
        print(process.pid, seen.decode() or "-", flush=True)
        if sys.argv[1] == "die":
            os.kill(os.getpid(), 9)  # the bot killed: nothing of it runs again
        await process.aclose()

    asyncio.run(draw())
"""


@pytest.fixture
def timers() -> Timers:
    return Timers()


@pytest.fixture
async def process(timers: Timers) -> AsyncIterator[ChartProcess]:
    own = ChartProcess(idle_s=90, later=timers)
    yield own
    await own.aclose()


@pytest.mark.slow  # a real bot process
@pytest.mark.timeout(120)
def test_the_bot_process_never_imports_matplotlib() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RENDER_IN_A_FRESH_BOT], capture_output=True, timeout=100,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr.decode() == "matplotlib=False PIL=False"
    image = Image.open(io.BytesIO(done.stdout))
    assert (image.format, image.size) == ("PNG", (WIDTH_PX, HEIGHT_PX))


@pytest.mark.slow  # a chart process of its own (matplotlib imported in it afresh)
async def test_a_killed_child_fails_its_chart_and_the_next_gets_a_new_one(
    process: ChartProcess,
) -> None:
    cache = ChartCache(process=process)
    drawing = asyncio.ensure_future(cache.get_or_render(bessemer(), HISTORY))
    for _ in range(100):  # until the child is started (at once, while importing matplotlib)
        if process.pid is not None:
            break
        await asyncio.sleep(0)
    killed = process.pid
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    with pytest.raises(ChartError, match="the chart process died while drawing bessemer-2021"):
        await drawing
    assert gone(killed)
    png = await cache.get_or_render(bessemer(), HISTORY)
    assert Image.open(io.BytesIO(png)).size == (WIDTH_PX, HEIGHT_PX)
    assert process.pid not in (None, killed)


@pytest.mark.slow  # a chart process of its own (matplotlib imported in it afresh)
async def test_the_child_exits_when_no_chart_was_asked_for_a_while(
    process: ChartProcess, timers: Timers
) -> None:
    await process.draw(render_chart, bessemer(), HISTORY)
    child = process.pid
    assert child is not None
    await process.draw(render_chart, bessemer(), HISTORY[:1])
    assert [delay for delay, _ in timers.set] == [90, 90]  # one timer after each chart
    timers.set[0][1]()  # the first chart's: another was asked for since
    assert process.pid == child
    timers.set[1][1]()  # the last chart's: idle since
    assert process.pid is None
    assert gone(child)
    await process.draw(render_chart, bessemer(), HISTORY)  # the next chart: a new child
    assert process.pid not in (None, child)


@pytest.mark.slow  # a chart process of its own (matplotlib imported in it afresh)
async def test_the_last_app_to_close_shuts_the_child_down(process: ChartProcess) -> None:
    process.hold()
    process.hold()
    await process.draw(render_chart, bessemer(), HISTORY)
    child = process.pid
    assert child is not None
    await process.release()
    assert process.pid == child
    await process.release()
    assert process.pid is None
    assert gone(child)


def test_the_child_waits_a_positive_time() -> None:
    with pytest.raises(ValueError, match="positive"):
        ChartProcess(idle_s=0)
    with pytest.raises(ValueError, match="positive"):
        ChartProcess(timeout_s=0)
    with pytest.raises(ValueError, match="at least one"):
        ChartProcess(workers=0)


def started_by_a_script(tmp_path: Path, then: str) -> tuple[int, str]:
    """Run a script like the ``tallybot`` console script that draws one chart (``then``:
    "die" kills itself with SIGKILL after): the child's pid and the bot modules it imported."""
    script = tmp_path / "tallybot"
    script.write_text(STARTED_BY_A_CONSOLE_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), then], capture_output=True, timeout=100, cwd=os.getcwd(),
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )  # fmt: skip
    out = done.stdout.decode().split()
    assert len(out) == 2, (done.returncode, done.stdout, done.stderr.decode()[-2000:])
    return int(out[0]), out[1]


@pytest.mark.slow  # a real bot process
@pytest.mark.timeout(120)
def test_the_child_is_the_same_program_whatever_started_the_bot(tmp_path: Path) -> None:
    pid, imported = started_by_a_script(tmp_path, "close")
    assert imported == "-"  # not bot.runtime.cli, nor the app: only what drawing needs
    assert gone(pid)


@pytest.mark.slow  # a real bot process
@pytest.mark.timeout(120)
def test_the_child_exits_when_the_bot_is_killed(tmp_path: Path) -> None:
    pid, _ = started_by_a_script(tmp_path, "die")
    assert gone(pid)  # not left orphaned, drawing on


@pytest.mark.slow  # a chart process of its own (matplotlib imported in it afresh)
async def test_a_chart_that_takes_too_long_is_abandoned_and_the_next_gets_a_new_child() -> None:
    process = ChartProcess(timeout_s=0.5, later=Timers())
    try:
        await process.draw(fake, bessemer(), HISTORY)
        child = process.pid
        assert child is not None
        with pytest.raises(
            ChartError, match=r"the chart of bessemer-2021 took longer than 0.5 s"
        ) as abandoned:
            await process.draw(stuck, bessemer(), HISTORY)
        assert abandoned.value.abandoned  # its alert says so (issue 27, part 6)
        assert gone(child)
        assert await process.draw(fake, bessemer(), HISTORY) == f"png {bessemer().title} 2".encode()
        assert process.pid not in (None, child)
    finally:
        await process.aclose()


@pytest.mark.slow  # a chart process of its own (matplotlib imported in it afresh)
@pytest.mark.parametrize(
    ("workers", "order"),
    [
        (1, ["bessemer-2021 abandoned", "local-7 drawn", "bessemer-2021 abandoned"]),
        (2, ["local-7 drawn", "bessemer-2021 abandoned", "bessemer-2021 abandoned"]),
    ],
)
async def test_one_counts_charts_delay_anothers_by_one_chart_at_most(
    workers: int, order: list[str]
) -> None:
    """One process: local-7 waits for the chart being drawn, not for bessemer's others. Two
    (the default): a count draws one chart at a time, so local-7 does not wait at all."""
    process = ChartProcess(timeout_s=0.5, workers=workers, later=Timers())
    other = replace(bessemer(), id="local-7", title="Local 7")
    finished: list[str] = []

    async def draw(render: Render, count: Count) -> None:
        try:
            await process.draw(render, count, HISTORY)
            finished.append(f"{count.id} drawn")
        except ChartError:
            finished.append(f"{count.id} abandoned")

    try:
        third = replace(bessemer(), id="local-8")
        await asyncio.gather(  # the children started (two counts at once: two with two)
            process.draw(fake, other, HISTORY), process.draw(fake, third, HISTORY)
        )
        hung = [asyncio.ensure_future(draw(stuck, bessemer())) for _ in range(3)]
        await asyncio.sleep(0)  # the three asked first
        await draw(fake, other)
        await asyncio.gather(*hung)
    finally:
        await process.aclose()
    assert finished == [*order, "bessemer-2021 abandoned"]
