"""Words on a chart are made to fit in bounded time (issue 27 part 1): where a line too long is
cut is found by halving, a few measures whatever its length, never one measure a character."""

from __future__ import annotations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from bot.domain import chart_text


@pytest.fixture
def measures(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times text was measured (the real measure, counted)."""
    seen = [0]
    real = Text.get_window_extent

    def counted(self: Text, *args: object, **kwargs: object) -> object:
        seen[0] += 1
        return real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Text, "get_window_extent", counted)
    return seen


def figure() -> Figure:
    fig = Figure(figsize=(12, 8), dpi=100)
    FigureCanvasAgg(fig)
    return fig


@pytest.mark.parametrize("length", [200, 4000])
def test_a_long_line_is_cut_in_a_few_measures(measures: list[int], length: int) -> None:
    fig = figure()
    words = chart_text.text(fig, 0, 0, "W" * length, size=30)
    chart_text.shrink(words, 1152, smallest=24)
    assert words.get_window_extent().width <= 1152
    assert words.get_text().endswith("…")
    kept = len(words.get_text())
    words.set_text("W" * kept + "W…")  # one character more does not fit
    assert words.get_window_extent().width > 1152
    assert measures[0] < 40  # sizes 30 to 24, and log2(4000) = 12 cuts


def test_a_long_label_wraps_on_two_lines_in_a_few_measures(measures: list[int]) -> None:
    fig = figure()
    words = chart_text.text(fig, 0, 0, "Gewerkschaftsvertretung " * 40, size=22)
    chart_text.wrap(words, 384, smallest=19)
    first, second = words.get_text().split("\n")
    assert words.get_window_extent().width <= 384
    assert first.startswith("Gewerkschaftsvertretung")
    assert second.endswith("…")
    assert measures[0] < 60
