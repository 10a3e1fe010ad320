"""Charts: the largest legal charts drawn, and another count's chart while one of them draws.

1. The longest legal title and labels (``bot/domain/limits.py``), the longest source name, as one
   word and as many, with two, ten and the most choices, each with 500 updates: drawn in this
   process (``render_chart``), wall and CPU time per chart (target: under 1.5 s).
2. The latency of an ordinary count's chart (Bessemer, 2 choices, 40 updates) in the chart
   process (``bot.charts.process``), alone and while another count asks for the largest legal
   chart again and again (target: unchanged within 1 s), and while another count's chart hangs
   (bounded by the chart timeout, 5 s, plus a new child's start).

Printed with the load average (the machine is shared: CPU time is the steadier figure).

    python -m bench.charts [--repeat 3] [--samples 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from bot.charts.chart import render_chart
from bot.charts.process import ChartProcess, Render
from bot.domain.limits import MAX_CHOICES, MAX_LABEL, MAX_SOURCE_NAME, MAX_TITLE
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally
from tests.charts import stuck
from tests.helpers import T0, bessemer, tally


def load() -> str:
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def longest(choices: int, *, words: bool, updates: int = 500) -> tuple[Count, list[Tally]]:
    """A count at every text limit: ``choices`` choices, labels and title as long as allowed
    (one unbroken word, or many), ``updates`` tallies from a source with the longest name."""
    text = ("Gewerkschaftsvertretung " * 10) if words else "W" * 200
    made = tuple(Choice(f"c{i}", text[i : i + MAX_LABEL]) for i in range(choices))
    count = Count(
        "largest", text[:MAX_TITLE], made, DecisionRule(RuleKind.PLURALITY), received=10**9
    )
    history = [
        Tally(
            count.id,
            {c.id: (i + 1) * (k + 3) * 11 for k, c in enumerate(made)},
            T0 + timedelta(minutes=i),
            "s" * MAX_SOURCE_NAME,
            seq=i + 1,
        )
        for i in range(updates)
    ]
    return count, history


def drawn(count: Count, history: Sequence[Tally], repeat: int) -> tuple[float, float, float]:
    """Median and worst wall seconds, and median CPU seconds, of drawing the chart."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        render_chart(count, history)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), max(walls), statistics.median(cpus)


async def latencies(process: ChartProcess, samples: int) -> list[float]:
    """Seconds for the ordinary count's chart, one after another."""
    ordinary = bessemer()
    history = [tally(10 * i, 20 * i, seq=i) for i in range(1, 41)]
    out = []
    for i in range(samples):
        at = time.perf_counter()
        await process.draw(render_chart, ordinary, history[: 30 + i])
        out.append(time.perf_counter() - at)
    return out


async def while_drawing(
    process: ChartProcess, render: Render, count: Count, history: Sequence[Tally], samples: int
) -> list[float]:
    """The ordinary count's latencies while ``count`` asks for its chart over and over."""
    stop = asyncio.Event()

    async def hog() -> None:
        while not stop.is_set():
            try:
                await process.draw(render, count, history)
            except Exception as exc:  # the stuck chart is abandoned: ask again
                if "took longer" not in str(exc):
                    raise

    hogs = [asyncio.ensure_future(hog()) for _ in range(3)]  # three asking at once
    await asyncio.sleep(0.2)
    try:
        return await latencies(process, samples)
    finally:
        stop.set()
        await asyncio.gather(*hogs)


def line(name: str, seconds: Sequence[float]) -> str:
    return (
        f"  {name:<44} p50 {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s ({load()})"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--samples", type=int, default=8)
    args = parser.parse_args()

    print(f"1. the largest legal charts, 500 updates each, in this process ({load()})")
    render_chart(*longest(2, words=True, updates=2))  # matplotlib imported, fonts loaded
    shapes = {
        f"2 choices, title {MAX_TITLE} and labels {MAX_LABEL} in one word": longest(2, words=False),
        "2 choices, the same in many words": longest(2, words=True),
        "10 choices, labels in one word": longest(10, words=False),
        f"{MAX_CHOICES} choices, labels in one word": longest(MAX_CHOICES, words=False),
        f"{MAX_CHOICES} choices, labels in many words": longest(MAX_CHOICES, words=True),
    }
    worst = 0.0
    for name, (count, history) in shapes.items():
        p50, most, cpu = drawn(count, history, args.repeat)
        worst = max(worst, cpu)
        print(f"  {name:<52} wall p50 {p50:.2f} s, max {most:.2f} s; CPU {cpu:.2f} s")
    print(f"  worst CPU time per chart {worst:.2f} s (target < 1.5 s) ({load()})")

    print("2. an ordinary count's chart in the chart process, latency")
    process = ChartProcess()
    try:
        await process.draw(render_chart, bessemer(), [tally(1, 2, seq=1)])  # the child started
        alone = await latencies(process, args.samples)
        print(line("alone", alone))
        largest, history = longest(MAX_CHOICES, words=False)
        busy = await while_drawing(process, render_chart, largest, history, args.samples)
        print(line(f"while another asks for its {MAX_CHOICES}-choice chart", busy))
        two, history = longest(2, words=True)
        busy2 = await while_drawing(process, render_chart, two, history, args.samples)
        print(line("while another asks for its 2-choice, 500-update chart", busy2))
        delta = max(statistics.median(busy), statistics.median(busy2)) - statistics.median(alone)
        print(f"  p50 slower by {delta:.2f} s while the largest draw (target: within 1 s)")
        hung = replace(bessemer(), id="hangs")
        stuck_ = await while_drawing(process, stuck, hung, history[:2], max(3, args.samples // 2))
        print(line(f"while another's chart hangs (abandoned at {process.timeout_s:g} s)", stuck_))
    finally:
        await process.aclose()


if __name__ == "__main__":
    asyncio.run(main())
