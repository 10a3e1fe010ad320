"""Charts: a count's history as a picture, for people who would rather look than read.

``render_chart`` turns the figure of ``bot.domain.chart_figure`` into a PNG of about 35 KB;
``chart_png`` has it drawn in a child process (``bot.charts.process``: matplotlib never enters
the bot's own, so its memory goes back when no chart is asked for) and keeps recent charts in a
``ChartCache``; ``bot.domain.format.chart_description`` says in words what a chart shows (its alt
text), and ``chart_attachment`` puts the two together as the file that goes with a reply or a
message (the ``chart`` command, and the final message of a count). Matplotlib is imported on the
first render, in the child. Renders run one at a time: matplotlib does not promise thread safety."""

from __future__ import annotations

import asyncio
import io
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

from cachetools import LRUCache

from bot.charts.process import Draws, Render
from bot.domain import format as fmt
from bot.domain.message import Attachment, Notice
from bot.domain.model import Count, Tally
from bot.errors import ChartError

CHART_TALLIES = 500
"""The most tallies a chart shows (the latest ones)."""

_RENDER_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def render_chart(count: Count, history: Sequence[Tally]) -> bytes:
    """The chart of ``history`` (accepted tallies of ``count``, oldest first) as PNG bytes."""
    from PIL import Image

    from bot.domain.chart_figure import DPI, chart_figure

    with _RENDER_LOCK:
        fig = chart_figure(count, history)
        raw = io.BytesIO()
        fig.savefig(raw, format="rgba", dpi=DPI)
        image = Image.frombytes("RGBA", fig.canvas.get_width_height(), raw.getvalue())
    # 256 colours are plenty for flat colours and antialiased edges, in a third of the bytes.
    small = image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
    out = io.BytesIO()
    small.save(out, format="PNG")
    return out.getvalue()


def render_chart_svg(count: Count, history: Sequence[Tally]) -> bytes:
    """The same chart as :func:`render_chart`, as SVG (for the public page: sharp on any
    screen). Text is drawn as outlines, so a label is shapes, never markup."""
    from bot.domain.chart_figure import WIDTH_PX

    return _svg(count, history, WIDTH_PX)


def render_chart_svg_narrow(count: Count, history: Sequence[Tally]) -> bytes:
    """The chart of :func:`render_chart_svg`, narrow for a phone (``chart_figure.NARROW_PX``):
    the same words and figures, in the same type."""
    from bot.domain.chart_figure import NARROW_PX

    return _svg(count, history, NARROW_PX)


def _svg(count: Count, history: Sequence[Tally], width_px: int) -> bytes:
    from bot.domain.chart_figure import chart_figure

    with _RENDER_LOCK:
        fig = chart_figure(count, history, width_px=width_px)
        out = io.BytesIO()
        fig.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


ChartKey = tuple[str, int]
ChartFailed = Callable[[Count, Exception], Awaitable[None]]
"""Told of a chart that could not be drawn: its count and why."""
FAILURE_WINDOW = timedelta(hours=1)
"""A count's place is told once in this long of its charts failing for one cause."""


def failure_notice(count: Count, exc: Exception) -> Notice:
    """The alert that ``count``'s chart could not be drawn because of ``exc``; grouped by count
    and cause (abandoned after its time bound, or drawing failed), so that a count failing many
    charts is told once per :data:`FAILURE_WINDOW`."""
    if isinstance(exc, ChartError) and exc.abandoned:
        cause, why = "abandoned", "it took too long to draw and was abandoned"
    else:
        cause, why = "failed", f"drawing it failed ({type(exc).__name__}; the log says more)"
    return Notice(
        f"The chart of {count.id} could not be drawn: {why}. Its messages go without a chart; "
        "its figures are unaffected. (Told once an hour at most.)",
        count.id,
        group=f"chart|{count.id}|{cause}",
    )


class ChartCache:
    """The last ``size`` charts rendered, by count id and last accepted ``seq``.

    A chart is also keyed by the count's definition, so a changed title or ballots received
    renders anew. Concurrent requests for the same chart share one render. Used from one event
    loop.
    """

    def __init__(
        self,
        size: int = 32,
        render: Render | None = None,
        *,
        process: Draws,
        failed: ChartFailed | None = None,
    ) -> None:
        """``render``: how a chart is drawn (a module-level function); ``render_chart``, a PNG,
        by default. ``process``: where it is drawn. ``failed``: told of every chart that could
        not be drawn (the app alerts the count's place: :func:`failure_notice`)."""
        if size < 1:
            raise ValueError(f"a chart cache holds at least one chart, got {size}")
        self.size = size
        self.process = process
        self.failed = failed
        self._draw = render
        self._charts: LRUCache[ChartKey, tuple[Count, bytes]] = LRUCache(size)
        self._rendering: dict[tuple[ChartKey, Count], asyncio.Task[bytes]] = {}

    def __len__(self) -> int:
        return len(self._charts)

    def get(self, count: Count, seq: int) -> bytes | None:
        key = (count.id, seq)
        found = self._charts.get(key)
        if found is None or found[0] != count:
            return None
        return found[1]

    def put(self, count: Count, seq: int, png: bytes) -> None:
        self._charts[(count.id, seq)] = (count, png)

    async def get_or_render(self, count: Count, history: Sequence[Tally]) -> bytes:
        seq = history[-1].seq
        png = self.get(count, seq)
        if png is not None:
            return png
        job = ((count.id, seq), count)
        task = self._rendering.get(job)
        if task is None:
            task = asyncio.ensure_future(self._render(count, history))
            self._rendering[job] = task
            task.add_done_callback(lambda _done: self._rendering.pop(job, None))
        return await asyncio.shield(task)  # one asker giving up does not stop it for the others

    async def _render(self, count: Count, history: Sequence[Tally]) -> bytes:
        try:
            png = await self.process.draw(self._draw or render_chart, count, history)
        except Exception as exc:
            if self.failed is not None:
                try:
                    await self.failed(count, exc)
                except Exception:  # telling of it must not hide why the chart failed
                    log.exception("the failed chart of %s could not be alerted", count.id)
            raise
        self.put(count, history[-1].seq, png)
        return png


async def chart_png(count: Count, history: Sequence[Tally], *, cache: ChartCache) -> bytes:
    """The chart of ``history`` as PNG bytes, from ``cache`` or drawn in its chart process."""
    if not history:
        raise ValueError(f"{count.id}: no tallies to chart")
    return await cache.get_or_render(count, history)


async def chart_attachment(
    count: Count, history: Sequence[Tally], *, cache: ChartCache
) -> Attachment:
    """The chart of ``history`` as a file to attach: ``<count>-<seq>.png``, described in words
    for those who cannot see it."""
    png = await chart_png(count, history, cache=cache)
    return Attachment(
        f"{count.id}-{history[-1].seq}.png", png, fmt.chart_description(count, history)
    )
