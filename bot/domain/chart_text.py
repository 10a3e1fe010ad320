"""Words on the chart, measured as they are placed: type set exactly as given, made to fit a
width (smaller, on two lines, or cut short), and labels spread so that none overlaps another."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.text import Text

from bot.domain.safe_text import clean

INK = "#222222"
"""The colour of text and of the lines that are not a choice's."""


def width(fig: Figure, words: str, size: float) -> float:
    """How wide ``words`` come out at ``size`` points, in pixels."""
    probe = text(fig, 0, 0, words, size=size)
    extent = probe.get_window_extent().width
    probe.remove()
    return float(extent)


def spread(
    wanted: Sequence[float], heights: Sequence[float], *, pad: float, low: float, high: float
) -> list[float]:
    """Centres as near ``wanted`` as can be for boxes of ``heights`` that keep ``pad`` apart and
    within ``low``..``high``: boxes that would overlap are pushed apart, keeping their order
    (on a tie, the first box on top)."""
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], -i))
    placed = list(wanted)
    floor = low
    for i in order:
        placed[i] = max(wanted[i], floor + heights[i] / 2)
        floor = placed[i] + heights[i] / 2 + pad
    ceiling = high
    for i in reversed(order):
        placed[i] = min(placed[i], ceiling - heights[i] / 2)
        ceiling = placed[i] - heights[i] / 2 - pad
    return placed


def shrink(text: Text, width_px: float, *, smallest: float) -> None:
    """Make ``text`` at most ``width_px`` wide: smaller type down to ``smallest`` points, then
    its longest line cut short with an ellipsis."""
    while text.get_window_extent().width > width_px:
        size = float(text.get_fontsize())
        if size > smallest:
            text.set_fontsize(size - 1)
            continue
        lines = text.get_text().split("\n")
        longest = max(range(len(lines)), key=lambda k: len(lines[k]))
        kept = lines[longest].removesuffix("…")[:-1].rstrip()
        if not kept:
            return
        lines[longest] = kept + "…"
        text.set_text("\n".join(lines))


def wrap(text: Text, width_px: float, *, smallest: float) -> None:
    """Like ``shrink``, but when a little smaller type is not enough, first try the text on two
    lines: of about equal length, or else as much as fits on the first and the rest, cut short
    if need be, on the second."""
    words = text.get_text().split()
    size = float(text.get_fontsize())
    while text.get_window_extent().width > width_px and float(text.get_fontsize()) > size - 2:
        text.set_fontsize(float(text.get_fontsize()) - 1)  # a little smaller on one line?
    if text.get_window_extent().width <= width_px or len(words) < 2:
        shrink(text, width_px, smallest=smallest)
        return
    text.set_fontsize(size)
    splits = [(" ".join(words[:k]), " ".join(words[k:])) for k in range(len(words) - 1, 0, -1)]
    first, second = min(splits, key=lambda pair: max(len(pair[0]), len(pair[1])))  # first: longer
    text.set_text(f"{first}\n{second}")
    while text.get_window_extent().width > width_px and float(text.get_fontsize()) > smallest:
        text.set_fontsize(float(text.get_fontsize()) - 1)
    if text.get_window_extent().width <= width_px:
        return
    chosen = splits[-1]
    for pair in splits:  # the longest first line that fits
        text.set_text(pair[0])
        if text.get_window_extent().width <= width_px:
            chosen = pair
            break
    text.set_text("\n".join(chosen))
    shrink(text, width_px, smallest=smallest)


def text(
    where: Figure | Axes,
    x: float,
    y: float,
    words: str,
    *,
    size: float,
    colour: str = INK,
    weight: str = "normal",
    ha: str = "left",
    va: str = "baseline",
    transform: Any = None,
    box: bool = False,
    offset: tuple[float, float] | None = None,
) -> Text:
    """Text exactly as given (``$`` in a count's title is a dollar sign, not mathematics; no
    control characters), ``offset`` points away from ``x``, ``y`` when given."""
    words = clean(words)
    style: dict[str, Any] = {
        "fontsize": size,
        "color": colour,
        "fontweight": weight,
        "ha": ha,
        "va": va,
        "parse_math": False,
    }
    if transform is not None:
        style["transform"] = transform
    if box:
        style["bbox"] = {"facecolor": "white", "edgecolor": "none", "pad": 2, "alpha": 0.9}
    if offset is None:
        return where.text(x, y, words, clip_on=False, **style)
    assert isinstance(where, Axes)
    return where.annotate(
        words, (x, y), xytext=offset, textcoords="offset points", annotation_clip=False, **style
    )
