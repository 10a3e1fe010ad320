"""Words on the chart, measured as they are placed: type set exactly as given, made to fit a
width (smaller, on two lines or as many as it takes, or cut short), and labels spread so that
none overlaps another."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
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


def _wide(text: Text) -> float:
    return float(text.get_window_extent().width)


def smaller(text: Text, width_px: float, *, smallest: float) -> None:
    """Smaller type, in whole points, until ``text`` is at most ``width_px`` wide or at
    ``smallest`` points: straight to the size its width says (type is about as wide as it is
    large), then a point less while that is not enough, so a few measures in all."""
    size = float(text.get_fontsize())
    wide = _wide(text)
    while wide > width_px and size > smallest:
        size = max(smallest, min(size - 1, float(math.floor(size * width_px / wide))))
        text.set_fontsize(size)
        wide = _wide(text)


def _most_that_fits(fits: Callable[[int], bool], most: int) -> int:
    """The largest ``n`` in 0..``most`` with ``fits(n)``, given that whatever fits, less fits
    too (0 when nothing does): a binary search, so a long text costs a few measures, not one a
    character."""
    low, high = 0, most
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def shrink(text: Text, width_px: float, *, smallest: float) -> None:
    """Make ``text`` at most ``width_px`` wide: smaller type down to ``smallest`` points, then
    each line too wide cut short with an ellipsis (where it is cut is found by halving, so the
    time taken grows with the logarithm of the length, not its square)."""
    smaller(text, width_px, smallest=smallest)
    if _wide(text) <= width_px:
        return
    lines = text.get_text().split("\n")
    for k, line in enumerate(lines):
        text.set_text(line)
        if _wide(text) <= width_px:
            continue

        def fits(n: int, line: str = line) -> bool:
            text.set_text(line[:n].rstrip() + "…")
            return _wide(text) <= width_px

        lines[k] = line[: _most_that_fits(fits, len(line) - 1)].rstrip() + "…"
    text.set_text("\n".join(lines))


def wrap(text: Text, width_px: float, *, smallest: float) -> None:
    """Like ``shrink``, but when a little smaller type is not enough, first try the text on two
    lines: of about equal length, or else as much as fits on the first and the rest, cut short
    if need be, on the second."""
    words = text.get_text().split()
    size = float(text.get_fontsize())
    smaller(text, width_px, smallest=size - 2)  # a little smaller on one line?
    if _wide(text) <= width_px or len(words) < 2:
        shrink(text, width_px, smallest=smallest)
        return
    text.set_fontsize(size)
    splits = [(" ".join(words[:k]), " ".join(words[k:])) for k in range(len(words) - 1, 0, -1)]
    first, second = min(splits, key=lambda pair: max(len(pair[0]), len(pair[1])))  # first: longer
    text.set_text(f"{first}\n{second}")
    smaller(text, width_px, smallest=smallest)
    if _wide(text) <= width_px:
        return

    def first_fits(n: int) -> bool:  # the first line of ``n`` words fits
        text.set_text(" ".join(words[:n]))
        return _wide(text) <= width_px

    kept = max(1, _most_that_fits(first_fits, len(words) - 1))  # the longest first line that fits
    text.set_text(" ".join(words[:kept]) + "\n" + " ".join(words[kept:]))
    shrink(text, width_px, smallest=smallest)


def flow(text: Text, width_px: float, *, smallest: float) -> None:
    """On as many lines as it takes, each at most ``width_px`` wide, broken between words (a
    word too wide for a line of its own: ``shrink``), so that no word is lost to a narrow
    picture. A measure a word."""
    lines: list[str] = []
    for line in text.get_text().split("\n"):
        words = line.split(" ")
        current = words[0]
        for word in words[1:]:
            text.set_text(f"{current} {word}")
            if _wide(text) <= width_px:
                current = f"{current} {word}"
            else:
                lines.append(current)
                current = word
        lines.append(current)
    text.set_text("\n".join(lines))
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
