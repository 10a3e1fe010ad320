"""Chart renderers and a render counter for tests.

A renderer is sent by name to the process charts are drawn in (``bot.charts.process``), so the
ones here are module-level functions, put in place of ``bot.charts.chart.render_chart`` with
``monkeypatch``; ``Counted`` records what is asked of a real drawing process.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

from bot.charts.process import Draws, Render
from bot.domain.model import Count, Tally


def broken(count: Count, history: Sequence[Tally]) -> bytes:
    raise RuntimeError("no fonts")


def fake(count: Count, history: Sequence[Tally]) -> bytes:
    """``b"png <title> <seq>"``, at once."""
    return f"png {count.title} {history[-1].seq}".encode()


class Counted:
    """Draws in ``process`` (the run's: the ``chart_process`` fixture) and records the last
    ``seq`` of every chart asked."""

    def __init__(self, process: Draws) -> None:
        self.process = process
        self.seqs: list[int] = []

    async def draw(self, render: Render, count: Count, history: Sequence[Tally]) -> bytes:
        self.seqs.append(history[-1].seq)
        return await self.process.draw(render, count, history)


def stuck(count: Count, history: Sequence[Tally]) -> bytes:
    """Never returns (a chart that hangs): waits on an event nobody sets."""
    threading.Event().wait()
    raise AssertionError("unreachable")


def modules(count: Count, history: Sequence[Tally]) -> bytes:
    """Which of the bot's entry modules the drawing process has imported."""
    return " ".join(
        sorted(
            m for m in ("bot.runtime.cli", "bot.runtime.run", "bot.runtime.app") if m in sys.modules
        )
    ).encode()
