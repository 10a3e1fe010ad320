"""The chart drawn: a count's history as a matplotlib ``Figure`` (``bot.charts.chart`` makes the
PNG).

Running totals per choice against the ballots counted, the line a side has to reach to clinch
(majority and threshold rules), the pauses, the challenged ballots set aside, the latest figures,
1200x800 pixels, or 600x900 for a phone's screen (:data:`NARROW_PX`: the same words and
figures, each on as many lines as it takes, so that shown across a phone it is read without
zooming; ``bot.web`` serves both and the browser picks). Labels are measured as they are placed, so
that none overlaps another or runs off the picture. Every figure and every phrase comes from
``bot.domain.arithmetic`` and ``bot.domain.format``: this module only draws them.

Only ``Figure`` and the Agg canvas are used, never pyplot's global state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from bot.domain import chart_text
from bot.domain import format as fmt
from bot.domain.arithmetic import OutcomeKind, Standing, standing
from bot.domain.chart_text import INK
from bot.domain.model import Count, RuleKind, Tally, TallyState

WIDTH_PX = 1200
HEIGHT_PX = 800
NARROW_PX = 600
NARROW_HEIGHT_PX = 900
"""The size of the narrow chart, whose words take as many lines as they need (on the wide one
they are smaller or cut short to fit one or two): shown 300 CSS pixels wide, on a phone 320
pixels wide, its type of :data:`SMALL_PT` is 11.8 pixels high (a word too long for a line of its
own shrinks to 3 points less, 9.7 pixels)."""
DPI = 100
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""The Okabe-Ito colours (told apart with every common colour blindness), by choice position."""
MUTED = "#5F5F5F"
SHADE = "#E4E4E4"
TITLE_PT = 30
SUBTITLE_PT = 24
TEXT_PT = 22
NOTE_PT = 19
SMALL_PT = 17
"""Type sizes: at 100 dpi, the smallest is 24 pixels high (about 8 on a phone showing the wide
chart across its width, 13 showing the narrow one); a label made to fit shrinks to 3 points
less at the most."""
MARGIN_PX = 24
AXES_BOTTOM = 0.19
"""The plot's bottom, as a fraction of the figure's height, above the latest figures. Its top is
below the subtitle (one line or two), its left edge right of the widest number of votes, and
its right edge left of the widest end label."""
LABEL_ROOM = (0.2, 0.32)
"""The least and the most of the figure's width the end labels take."""


def colour(position: int) -> str:
    """The colour of the choice at ``position`` in the count's order (the same on every chart)."""
    return PALETTE[position % len(PALETTE)]


FIGURED = 4000
"""What the figures of a chart may cost: every tally shown is worked out in full (who can still
clinch, and with how many), which costs about the cube of the number of choices; a chart shows
at most ``FIGURED`` over that cube of the latest tallies (500 with two choices, 32 with five, 4
with ten, 2 with more), so that a count with the most choices draws as fast as one with two."""


def tallies_shown(count: Count) -> int:
    """How many of the latest tallies the chart of ``count`` shows (:data:`FIGURED`)."""
    return max(2, FIGURED // len(count.choices) ** 3)


def chart_figure(count: Count, history: Sequence[Tally], *, width_px: int = WIDTH_PX) -> Figure:
    """The chart of ``history`` (accepted tallies of ``count``, oldest first) on an Agg canvas,
    ``width_px`` wide (:data:`WIDTH_PX` or :data:`NARROW_PX`); the latest :func:`tallies_shown`
    of them.

    Not thread-safe: ``bot.charts.chart.render_chart`` calls it under a lock.
    """
    if not history:
        raise ValueError(f"{count.id}: no tallies to chart")
    history = history[-tallies_shown(count) :]
    high = HEIGHT_PX if width_px >= WIDTH_PX else NARROW_HEIGHT_PX
    fig = Figure(figsize=(width_px / DPI, high / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    _draw(fig, count, history, [standing(count, t) for t in history])
    return fig


def _draw(
    fig: Figure,
    count: Count,
    history: Sequence[Tally],
    standings: Sequence[Standing],
) -> None:
    last, s = history[-1], standings[-1]
    wide = int(fig.bbox.width)
    xs = [st.counted for st in standings]
    targets = [_target(count, st) for st in standings]
    x_max = max([*xs, s.received or 0, 1])
    y_top = max([*(v for t in history for v in t.votes.values()), *_known(targets), 1])
    under, bottom = (_narrow_frame if wide < WIDTH_PX else _wide_frame)(fig, count, history, s)
    labels = _end_labels(fig, count, s)
    room = max([LABEL_ROOM[0] * wide, *(t.get_window_extent().width for t in labels)])
    top = (under.get_window_extent().y0 - 28) / fig.bbox.height
    ax_left = (MARGIN_PX + 46 + chart_text.width(fig, fmt.n(int(y_top * 1.25)), NOTE_PT)) / wide
    ax_right = 1 - (MARGIN_PX + 16 + room) / wide
    ax = fig.add_axes((ax_left, bottom, ax_right - ax_left, top - bottom))
    ax.set_xlim(0, x_max)
    ax.set_ylim(0, y_top * 1.25)
    tick_room = chart_text.width(fig, fmt.n(x_max), NOTE_PT) + 40  # no two axis numbers touch
    _style_axes(ax, x_ticks=max(2, min(5, int(ax.get_window_extent().width // tick_room))))

    _challenged_band(ax, last, s, x_max)
    paused = _pauses(ax, history, xs, x_max)
    at = _clinched_at(history, xs, standings)
    clinched = _clinch_label(ax, at)
    _target_line(ax, count, xs, targets, avoid=[*paused, *clinched])
    markers = len(history) <= 40
    for position, choice in enumerate(count.choices):
        ax.plot(
            xs,
            [t.votes[choice.id] for t in history],
            color=colour(position),
            linewidth=4,
            marker="o" if markers else None,
            markersize=6,
            solid_joinstyle="round",
            zorder=3,
        )
    _clinch_ring(ax, at)
    _place_end_labels(fig, ax, labels, count, s, x=ax_right + 16 / wide)


def _wide_frame(
    fig: Figure, count: Count, history: Sequence[Tally], s: Standing
) -> tuple[Text, float]:
    """The title and subtitle above the plot, the progress and source below it, on the wide
    chart: one line each (the subtitle two), smaller or cut short to fit; returns the subtitle
    and the plot's bottom (a fraction of the figure's height)."""
    last = history[-1]
    full_width = WIDTH_PX - 2 * MARGIN_PX
    left = MARGIN_PX / WIDTH_PX
    title = chart_text.text(fig, left, 0.97, count.title, size=TITLE_PT, weight="bold", va="top")
    chart_text.shrink(title, full_width, smallest=SUBTITLE_PT)
    under = chart_text.text(
        fig,
        left,
        0.895,
        fmt.chart_subtitle(count, last, s, fmt.corrects_a_final(history)),
        size=SUBTITLE_PT,
        va="top",
    )
    chart_text.wrap(under, full_width, smallest=NOTE_PT)
    progress = chart_text.text(fig, left, 0.06, fmt.progress_line(last, s), size=NOTE_PT)
    chart_text.shrink(progress, full_width, smallest=SMALL_PT - 2)
    footer = chart_text.text(fig, left, 0.015, _source(last), size=SMALL_PT, colour=MUTED)
    chart_text.shrink(footer, full_width, smallest=SMALL_PT - 3)
    return under, AXES_BOTTOM


def _narrow_frame(
    fig: Figure, count: Count, history: Sequence[Tally], s: Standing
) -> tuple[Text, float]:
    """The same words as :func:`_wide_frame`, on the narrow chart: each on as many lines as it
    takes, stacked from the top and from the bottom."""
    last = history[-1]
    high = fig.bbox.height
    full_width = fig.bbox.width - 2 * MARGIN_PX
    left = MARGIN_PX / fig.bbox.width
    title = chart_text.text(
        fig, left, 1 - MARGIN_PX / high, count.title, size=SUBTITLE_PT, weight="bold", va="top"
    )
    chart_text.flow(title, full_width, smallest=NOTE_PT)
    under = chart_text.text(
        fig,
        left,
        (title.get_window_extent().y0 - 12) / high,
        fmt.chart_subtitle(count, last, s, fmt.corrects_a_final(history)),
        size=NOTE_PT,
        va="top",
    )
    chart_text.flow(under, full_width, smallest=SMALL_PT)
    footer = chart_text.text(
        fig, left, MARGIN_PX / 2 / high, _source(last), size=SMALL_PT, colour=MUTED, va="bottom"
    )
    chart_text.flow(footer, full_width, smallest=SMALL_PT - 3)
    progress = chart_text.text(
        fig,
        left,
        (footer.get_window_extent().y1 + 8) / high,
        fmt.progress_line(last, s),
        size=SMALL_PT,
        va="bottom",
    )
    chart_text.flow(progress, full_width, smallest=SMALL_PT - 2)
    return under, (progress.get_window_extent().y1 + 90) / high


def _source(last: Tally) -> str:
    return f"Source: {last.source} · as of update #{last.seq}"  # times: in the text beside


def _style_axes(ax: Axes, *, x_ticks: int) -> None:
    ax.tick_params(labelsize=NOTE_PT, colors=INK, length=0, pad=8)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.spines["bottom"].set_color(MUTED)
    thousands = FuncFormatter(lambda value, _pos: fmt.n(int(value)))
    ax.xaxis.set_major_formatter(thousands)
    ax.yaxis.set_major_formatter(thousands)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=x_ticks, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.grid(axis="y", color=SHADE, linewidth=1.2)
    ax.set_axisbelow(True)
    ax.set_xlabel("Ballots counted", fontsize=NOTE_PT, color=INK, labelpad=6)
    ax.set_ylabel("Votes", fontsize=NOTE_PT, color=INK, labelpad=8)


def _target(count: Count, s: Standing) -> int | None:
    """The height of the clinch line at one tally, while nothing is decided, under a rule that
    has one (majority, threshold): the fewest votes with which a choice clinches by reaching the
    rule. The tie holder's target is left out, as it clinches by keeping the others below it."""
    if count.rule.kind is RuleKind.PLURALITY or s.decided is not None:
        return None
    reaching = [t for c, t in s.targets.items() if t is not None and c != count.rule.tie_holder]
    return min(reaching) if reaching else None


def _known(values: Sequence[int | None]) -> list[int]:
    return [v for v in values if v is not None]


def _target_line(
    ax: Axes,
    count: Count,
    xs: Sequence[int],
    targets: Sequence[int | None],
    *,
    avoid: Sequence[Text],
) -> None:
    """A dashed step line at the clinch target, carried on to the tally that reached it, labelled
    above it, or below it where the label would cover one of ``avoid``."""
    drawn = [i for i, t in enumerate(targets) if t is not None]
    if not drawn:
        return
    line_x: list[float] = []
    line_y: list[float] = []
    for i, target in enumerate(targets):
        if target is None:
            line_x.append(math.nan)
            line_y.append(math.nan)
            continue
        reach = xs[i + 1] if i + 1 < len(xs) else xs[i]
        line_x += [xs[i], reach]
        line_y += [target, target]
    ax.plot(line_x, line_y, color=INK, linewidth=2, linestyle=(0, (6, 4)), zorder=2)
    latest = targets[drawn[-1]] or 0
    threshold = count.rule.threshold
    rule = "a majority" if threshold is None else f"{threshold.numerator}/{threshold.denominator}"
    words = f"To clinch {rule}: {fmt.n(latest)}"
    places = [(max(_known(targets)), "bottom", (8, 5)), (min(_known(targets)), "top", (8, -7))]
    for y, va, offset in places:
        label = chart_text.text(ax, xs[drawn[0]], y, words, size=NOTE_PT, va=va, offset=offset)
        _within_plot(ax, label)
        box = label.get_window_extent()
        if not any(box.overlaps(other.get_window_extent()) for other in avoid):
            return
        label.remove()
    y, va, offset = places[0]  # no room either way: above it
    _within_plot(
        ax, chart_text.text(ax, xs[drawn[0]], y, words, size=NOTE_PT, va=va, offset=offset)
    )


def _within_plot(ax: Axes, label: Text) -> None:
    """``label`` on as many lines as it takes not to run past the plot's right edge (on the
    narrow chart)."""
    box, plot = label.get_window_extent(), ax.get_window_extent()
    if box.x1 > plot.x1:
        chart_text.flow(label, plot.x1 - box.x0, smallest=SMALL_PT)


def _challenged_band(ax: Axes, tally: Tally, s: Standing, x_max: int) -> None:
    """The challenged ballots set aside, hatched at the end of the ballots received."""
    if not tally.challenged or s.received is None:
        return
    start = s.received - tally.challenged
    ax.axvspan(start, s.received, facecolor="none", edgecolor="#B0B0B0", hatch="//", linewidth=0)
    words = f"{fmt.n(tally.challenged)}\nchallenged"
    where = ax.get_xaxis_transform()
    label = chart_text.text(
        ax,
        (start + s.received) / 2,
        0.03,
        words,
        size=SMALL_PT,
        colour=MUTED,
        ha="center",
        va="bottom",
        transform=where,
        box=True,
    )
    band_px = tally.challenged / x_max * ax.get_window_extent().width
    if label.get_window_extent().width > band_px - 8:  # too narrow: just left of it instead
        label.remove()
        chart_text.text(
            ax,
            start,
            0.03,
            words,
            size=SMALL_PT,
            colour=MUTED,
            ha="right",
            va="bottom",
            transform=where,
            box=True,
            offset=(-6, 0),
        )


def _pauses(ax: Axes, history: Sequence[Tally], xs: Sequence[int], x_max: int) -> list[Text]:
    """A shaded span wherever the count was paused, labelled with when it paused where the label
    has room; returns the labels."""
    labels: list[Text] = []
    half = x_max * 0.006
    plot = ax.get_window_extent()
    free_from = plot.x0
    for i, tally in enumerate(history):
        if tally.state is not TallyState.PAUSED:
            continue
        if i > 0 and history[i - 1].state is TallyState.PAUSED:
            continue
        end = i
        while end + 1 < len(history) and history[end + 1].state is TallyState.PAUSED:
            end += 1
        resumed = xs[end + 1] if end + 1 < len(history) else xs[end]
        ax.axvspan(xs[i] - half, resumed + half, color=SHADE, linewidth=0, zorder=1)
        label = chart_text.text(
            ax,
            xs[i],
            0.97,
            f"Paused\nat update #{tally.seq}",
            size=SMALL_PT,
            colour=MUTED,
            ha="center",
            va="top",
            transform=ax.get_xaxis_transform(),
            box=True,
        )
        box = label.get_window_extent()
        if box.x0 < plot.x0:
            label.set_horizontalalignment("left")
            label.set_x(0)
        elif box.x1 > plot.x1:
            label.set_horizontalalignment("right")
            label.set_x(x_max)
        box = label.get_window_extent()
        if box.x0 < free_from:
            label.remove()  # it would overlap the label of an earlier pause
            continue
        free_from = box.x1 + 12
        labels.append(label)
    return labels


def _clinched_at(
    history: Sequence[Tally], xs: Sequence[int], standings: Sequence[Standing]
) -> tuple[int, int] | None:
    """Where a choice first clinched (ballots counted, its votes), if before the final tally."""
    for i, s in enumerate(standings):
        if s.decided is None:
            continue
        winner = s.decided.winner
        if history[i].state is TallyState.FINAL or s.decided.kind is not OutcomeKind.WIN:
            return None
        assert winner is not None
        return xs[i], history[i].votes[winner]
    return None


def _clinch_label(ax: Axes, at: tuple[int, int] | None) -> list[Text]:
    """ "clinched" beside the ring :func:`_clinch_ring` draws; returns it (none: no ring)."""
    if at is None:
        return []
    x, votes = at
    label = chart_text.text(ax, x, votes, "clinched", size=NOTE_PT, va="top", offset=(14, -14))
    if label.get_window_extent().x1 > ax.get_window_extent().x1:  # no room on the right
        label.remove()
        label = chart_text.text(
            ax, x, votes, "clinched", size=NOTE_PT, ha="right", va="top", offset=(-14, -14)
        )
    return [label]


def _clinch_ring(ax: Axes, at: tuple[int, int] | None) -> None:
    """A ring where a choice first clinched (:func:`_clinched_at`)."""
    if at is None:
        return
    ax.plot(
        [at[0]],
        [at[1]],
        marker="o",
        markersize=22,
        markerfacecolor="none",
        markeredgecolor=INK,
        markeredgewidth=2.5,
        zorder=4,
    )


def _end_labels(fig: Figure, count: Count, s: Standing) -> list[Text]:
    """Each choice's name and latest figures, in its colour, to go right of the plot; names that
    are too long for the most room there wrap or shrink, and figures shrink to fit if they can."""
    most = LABEL_ROOM[1] * fig.bbox.width
    labels: list[Text] = []
    for position, choice in enumerate(count.choices):
        figures = f"{fmt.n(s.votes[choice.id])} ({fmt.pct(s.shares[choice.id])})"
        label = chart_text.text(
            fig,
            0,
            0,
            choice.label,
            size=TEXT_PT,
            colour=colour(position),
            weight="bold" if s.leader == choice.id else "normal",
            va="center",
        )
        if fig.bbox.width < WIDTH_PX:
            chart_text.flow(label, most, smallest=NOTE_PT)
        else:
            chart_text.wrap(label, most, smallest=NOTE_PT)
        label.set_text(f"{label.get_text()}\n{figures}")
        chart_text.smaller(label, most, smallest=SMALL_PT)
        labels.append(label)
    return labels


def _place_end_labels(
    fig: Figure, ax: Axes, labels: Sequence[Text], count: Count, s: Standing, x: float
) -> None:
    """Put the end labels at ``x`` (a fraction of the figure's width), each level with the end of
    its line, or pushed just far enough apart not to overlap."""
    y_low, y_high = ax.get_ylim()
    height_px = ax.get_window_extent().height
    wanted = [(s.votes[c.id] - y_low) / (y_high - y_low) for c in count.choices]
    heights = [t.get_window_extent().height / height_px for t in labels]
    placed = chart_text.spread(wanted, heights, pad=8 / height_px, low=0.0, high=1 + 12 / height_px)
    beside = blended_transform_factory(fig.transFigure, ax.transAxes)
    for label, y in zip(labels, placed, strict=True):
        label.set_transform(beside)
        label.set_position((x, y))
