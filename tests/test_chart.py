"""Charts: the Bessemer count and a three-way count as PNGs a phone can read, cached, off the loop.

``TALLYBOT_UPDATE_GOLDEN=1`` also renders the README's example, ``docs/chart-bessemer-2021.png``.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import os
import struct
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox
from PIL import Image

from adapters.console.adapter import ConsoleAdapter
from bot.charts import chart
from bot.charts.chart import ChartCache, chart_png, render_chart
from bot.charts.process import ChartProcess
from bot.commands.request import Reply
from bot.domain.arithmetic import counted
from bot.domain.chart_figure import (
    HEIGHT_PX,
    NARROW_HEIGHT_PX,
    NARROW_PX,
    WIDTH_PX,
    chart_figure,
    colour,
)
from bot.domain.format import chart_description as describe
from bot.domain.message import Attachment, Notice
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.subscription import ChannelRef, Platform
from bot.ingest.sources.timeline import parse_timeline
from bot.runtime.cli import demo_config_path
from tests import charts
from tests.charts import Counted
from tests.helpers import bessemer

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_BYTES = 200_000
DOCS_IMAGE = Path(__file__).parent.parent / "docs" / "chart-bessemer-2021.png"
START = datetime(2021, 4, 8, 19, 0, tzinfo=UTC)
OVERNIGHT = timedelta(hours=14)


def bessemer_history() -> list[Tally]:
    """The Bessemer count as bot/data/bessemer-2021.jsonl tells it, one tally per line.

    The file's ``at`` are demo seconds; here each is ten minutes of counting, and the count
    resumes 14 hours after it paused (the times are illustrative, as are the tallies between
    the reported ones).
    """
    path = demo_config_path().parent / "bessemer-2021.jsonl"
    entries = parse_timeline(path.read_text(), bessemer(), str(path))
    out: list[Tally] = []
    gap = timedelta(0)
    for seq, entry in enumerate(entries, start=1):
        if out and out[-1].state is TallyState.PAUSED and entry.state is not TallyState.PAUSED:
            gap = OVERNIGHT
        at = START + timedelta(minutes=10 * entry.at) + gap
        tally = entry.to_tally("bessemer-2021", observed_at=at, source="NLRB count (replay)")
        out.append(tally.with_seq(seq))
    return out


RIVERSIDE = Count(
    "riverside-nurses-2024",
    "Riverside General nurses: representation election",
    (
        Choice("alliance", "Nurses Alliance"),
        Choice("hwu", "Health Workers United"),
        Choice("none", "No union"),
    ),
    DecisionRule(RuleKind.MAJORITY),  # no majority for anyone: a runoff between the top two
    eligible=1650,
    received=1412,
    status=CountStatus.COUNTING,
)


def riverside_history() -> list[Tally]:
    """A made-up three-way count: a lunch pause, 38 challenged, no majority at the final."""
    rows = [
        (0, 0, 0, 0, 0, TallyState.COUNTING),
        (20, 61, 48, 22, 1, TallyState.COUNTING),
        (40, 140, 121, 47, 3, TallyState.COUNTING),
        (60, 233, 201, 88, 7, TallyState.COUNTING),
        (80, 301, 262, 119, 12, TallyState.PAUSED),
        (140, 301, 262, 119, 12, TallyState.COUNTING),
        (160, 388, 339, 153, 16, TallyState.COUNTING),
        (180, 472, 405, 184, 21, TallyState.COUNTING),
        (200, 551, 478, 212, 25, TallyState.COUNTING),
        (220, 598, 517, 231, 28, TallyState.FINAL),
    ]
    start = datetime(2024, 3, 14, 14, 0, tzinfo=UTC)
    return [
        Tally(
            RIVERSIDE.id,
            {"alliance": a, "hwu": h, "none": n},
            start + timedelta(minutes=minutes),
            "board agent",
            void=void,
            challenged=38,
            received=1412,
            state=state,
            seq=seq,
        )
        for seq, (minutes, a, h, n, void, state) in enumerate(rows, start=1)
    ]


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the PNG header (the IHDR chunk comes first)."""
    assert png[:8] == PNG_SIGNATURE
    assert png[12:16] == b"IHDR"
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def pixels_near(png: bytes, hex_colour: str) -> int:
    """How many pixels are ``hex_colour``, give or take a little on each channel (the PNG has a
    palette of 256 colours made for it)."""
    want = [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]
    image = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(
        n
        for n, rgb in image.getcolors(maxcolors=1 << 16) or []
        if all(abs(a - b) <= 8 for a, b in zip(rgb, want, strict=True))
    )


def check_png(png: bytes, count: Count) -> None:
    assert png_size(png) == (WIDTH_PX, HEIGHT_PX) == (1200, 800)
    assert len(png) < MAX_BYTES
    for position, _choice in enumerate(count.choices):  # every line, in its own colour
        assert pixels_near(png, colour(position)) > 2000


def texts(fig: Figure) -> list[Text]:
    fig.canvas.draw()  # lays out the tick labels too
    ax = fig.axes[0]
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    ticks = [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]
    ticks += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]
    found = [*fig.texts, *ax.texts, *ticks, ax.xaxis.label, ax.yaxis.label]
    return [t for t in found if t.get_visible() and t.get_text()]


def assert_no_overlap(fig: Figure) -> None:
    boxes = [(t.get_text(), t.get_window_extent()) for t in texts(fig)]
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"
    whole = Bbox.from_bounds(0, 0, fig.bbox.width, fig.bbox.height)
    for text, box in boxes:
        assert whole.containsx(box.x0), f"{text!r} runs off the left"
        assert whole.containsx(box.x1), f"{text!r} runs off the right"
        assert whole.containsy(box.y0), f"{text!r} runs off the bottom"
        assert whole.containsy(box.y1), f"{text!r} runs off the top"


def strings(fig: Figure) -> list[str]:
    return [t.get_text() for t in texts(fig)]


@pytest.mark.parametrize(
    ("tallies", "subtitle"),
    [
        (6, "Unofficial, count paused: No union leads by 637"),
        (10, "No union has clinched a majority (unofficial)"),
        (12, "Final tally: No union wins, 1,798 to 738"),
    ],
)
def test_bessemer_chart_pause_clinch_and_final(tallies: int, subtitle: str) -> None:
    history = bessemer_history()[:tallies]
    png = render_chart(bessemer(), history)
    check_png(png, bessemer())
    fig = chart_figure(bessemer(), history)
    shown = strings(fig)
    assert shown[:2] == ["Amazon BHM1 union election, Bessemer AL", subtitle]
    assert "To clinch a majority: 1,608" in shown
    # Issue 24: no clock time in the image (its text beside it shows times in the reader's zone)
    assert "Paused\nat update #6" in shown  # the overnight pause
    assert not any("UTC" in text for text in shown)
    assert "505\nchallenged" in shown
    assert ("clinched" in shown) == (tallies >= 10)  # marked where it happened
    assert_no_overlap(fig)


PHONE_CSS_PX = 300
"""How wide a chart shows on a phone 320 CSS pixels wide (the page's margins and border)."""


def words_of(fig: Figure) -> list[str]:
    """The words the chart says (line breaks aside), tick labels left out."""
    return [" ".join(t.get_text().split()) for t in [*fig.texts, *fig.axes[0].texts]]


@pytest.mark.parametrize("case", ["paused", "final", "runoff"])
def test_the_narrow_chart_says_the_same_in_type_a_phone_reads(case: str) -> None:
    """Issue 27 part 5: the phone's chart, shown 300 CSS pixels wide, has no type under 10 CSS
    pixels, and says every word and figure the wide one does."""
    count, history = {
        "paused": (bessemer(), bessemer_history()[:6]),
        "final": (bessemer(), bessemer_history()),
        "runoff": (RIVERSIDE, riverside_history()),
    }[case]
    narrow = chart_figure(count, history, width_px=NARROW_PX)
    assert (narrow.bbox.width, narrow.bbox.height) == (NARROW_PX, NARROW_HEIGHT_PX) == (600, 900)
    shown_px = min(t.get_fontsize() for t in texts(narrow)) * 100 / 72  # points at 100 dpi
    assert shown_px * PHONE_CSS_PX / NARROW_PX >= 10
    assert sorted(words_of(narrow)) == sorted(words_of(chart_figure(count, history)))
    assert not any(text.endswith("…") for text in words_of(narrow))
    assert_no_overlap(narrow)


def test_the_chart_of_a_corrected_final_says_corrected() -> None:
    """Issue 24: as published. The demo's own final corrects the ballots received, not a final:
    "Final tally"; a final that corrects the final says "Corrected final tally", and so does
    one published so (its headline kept), whatever came before it in the chart."""
    history = bessemer_history()
    last = history[-1]
    assert last.correction  # 3,215 received during the count, 3,117 in the NLRB's tally
    again = replace(last, seq=last.seq + 1, votes={"yes": 739, "no": 1797}, correction=True)
    said = "Corrected final tally: No union wins, 1,797 to 739"
    for shown in ([*history, again], [replace(again, headline=said)]):
        assert strings(chart_figure(bessemer(), shown))[1] == said
        assert f" {said}. " in describe(bessemer(), shown)
    assert strings(chart_figure(bessemer(), history))[1].startswith("Final tally: ")


def test_bessemer_chart_axes_start_at_zero_and_lines_follow_the_count() -> None:
    history = bessemer_history()
    fig = chart_figure(bessemer(), history)
    ax = fig.axes[0]
    assert ax.get_xlim() == (0, 3117)  # up to the ballots received, by the final tally
    assert ax.get_ylim()[0] == 0
    clinch, yes, no = ax.lines[0], ax.lines[1], ax.lines[2]
    assert list(yes.get_xdata()) == [counted(t) for t in history]
    assert list(no.get_ydata()) == [t.votes["no"] for t in history]
    drawn = [(x, y) for x, y in zip(clinch.get_xdata(), clinch.get_ydata(), strict=True) if y == y]
    assert {y for _, y in drawn} == {1608}
    assert (drawn[0][0], drawn[-1][0]) == (0, 2263)  # from the start to where No reached it
    bands = [p.get_x() for p in ax.patches]
    assert any(abs(x - (1563 - 3117 * 0.006)) < 1e-6 for x in bands)  # the overnight pause
    assert any(abs(x - (3117 - 505)) < 1e-6 for x in bands)  # the challenged ballots


def test_three_way_chart_runoff() -> None:
    history = riverside_history()
    png = render_chart(RIVERSIDE, history)
    check_png(png, RIVERSIDE)
    fig = chart_figure(RIVERSIDE, history)
    shown = strings(fig)
    assert shown[1] == (
        "Final tally: no majority; a runoff between\nNurses Alliance and Health Workers United"
    )
    assert "Health Workers United\n517 (38.4%)" in shown
    assert_no_overlap(fig)
    mid = chart_figure(RIVERSIDE, history[:5])
    assert strings(mid)[1].startswith("Unofficial, count paused: Nurses Alliance leads by 39")
    assert_no_overlap(mid)


def test_odd_input_still_draws() -> None:
    """A dollar sign is not mathematics; long names shrink or wrap; nothing counted yet."""
    count = Count(
        "ballot-measure",
        "Measure $5: raise the $2 fee? " * 4,
        (
            Choice("a", "A very long option name that goes on and on"),
            Choice("b", "B"),
            Choice("c", "C"),
            Choice("d", "D"),
            Choice("e", "E"),
        ),
        DecisionRule(RuleKind.PLURALITY),
    )
    start = datetime(2024, 11, 5, 20, 0, tzinfo=UTC)
    nothing = Tally(count.id, dict.fromkeys("abcde", 0), start, "clerk", seq=1)
    fig = chart_figure(count, [nothing])
    assert strings(fig)[1] == "Unofficial: No votes counted yet"
    assert_no_overlap(fig)
    close = replace(nothing, votes={"a": 50, "b": 40, "c": 39, "d": 20, "e": 1}, seq=2)
    fig = chart_figure(count, [nothing, close])
    shown = strings(fig)
    assert shown[0].startswith("Measure $5: raise the $2 fee? Measure $5")
    assert shown[0].endswith("…")
    assert "A very long option name\nthat goes on and on\n50 (33.3%)" in shown
    assert_no_overlap(fig)
    check_png(render_chart(count, [nothing, close]), count)


def test_millions_fit() -> None:
    count = Count(
        "referendum",
        "National referendum",
        (Choice("yes", "Yes"), Choice("no", "No")),
        DecisionRule(RuleKind.MAJORITY),
        received=31_450_000,
    )
    start = datetime(2024, 11, 5, 20, 0, tzinfo=UTC)
    history = [
        Tally(
            count.id,
            {"yes": 1_234_567 * k, "no": 1_100_000 * k},
            start + timedelta(hours=k),
            "commission",
            void=20_000 * k,
            challenged=250_000,
            seq=k + 1,
        )
        for k in range(13)
    ]
    fig = chart_figure(count, history)
    assert "Yes\n14,814,804 (52.9%)" in strings(fig)
    assert_no_overlap(fig)  # wider margins for the numbers, fewer of them along the bottom


def test_describe_says_what_the_chart_shows() -> None:
    assert describe(bessemer(), bessemer_history()) == (
        "Chart of Amazon BHM1 union election, Bessemer AL: votes for Yes (RWDSU), No union "
        "against ballots counted, updates #1 to #12. Final tally: No union wins, 1,798 to 738. "
        "2,612 of 3,117 ballots counted (83.8%); 505 challenged; 76 void."
    )


async def test_chart_png_renders_in_the_chart_process_and_caches(
    chart_process: ChartProcess,
) -> None:
    history = bessemer_history()
    renders = Counted(chart_process)
    cache = ChartCache(process=renders)
    first = await chart_png(bessemer(), history, cache=cache)
    again = await chart_png(bessemer(), history, cache=cache)
    assert again == first
    assert renders.seqs == [12]
    assert chart_process.pid not in (None, os.getpid())  # drawn in a child process
    check_png(first, bessemer())
    await chart_png(bessemer(), history[:-1], cache=cache)  # a new tally: a new chart
    assert renders.seqs == [12, 11]
    another = ChartCache(process=renders)
    assert await chart_png(bessemer(), history, cache=another) == first  # renders again
    assert renders.seqs == [12, 11, 12]


@pytest.fixture
def fake_renders(monkeypatch: pytest.MonkeyPatch, chart_process: ChartProcess) -> Counted:
    """Replaces the renderer with one that returns ``b"png <title> <seq>"`` at once."""
    monkeypatch.setattr(chart, "render_chart", charts.fake)
    return Counted(chart_process)


async def test_cache_is_a_bounded_lru_keyed_by_count_and_seq(fake_renders: Counted) -> None:
    history = bessemer_history()
    cache = ChartCache(size=2, process=fake_renders)
    for n in (10, 11, 10, 12, 10):  # 10 was used after 11, so 11 is the one to go for 12
        await chart_png(bessemer(), history[:n], cache=cache)
    assert fake_renders.seqs == [10, 11, 12]
    assert len(cache) == 2
    await chart_png(bessemer(), history[:11], cache=cache)
    assert fake_renders.seqs == [10, 11, 12, 11]
    renamed = replace(bessemer(), title="Bessemer, renamed")
    assert await chart_png(renamed, history[:11], cache=cache) == b"png Bessemer, renamed 11"
    assert fake_renders.seqs == [10, 11, 12, 11, 11]


async def test_concurrent_requests_share_one_render(fake_renders: Counted) -> None:
    history = bessemer_history()
    cache = ChartCache(process=fake_renders)
    pngs = await asyncio.gather(*(chart_png(bessemer(), history, cache=cache) for _ in range(5)))
    assert set(pngs) == {b"png Amazon BHM1 union election, Bessemer AL 12"}
    assert fake_renders.seqs == [12]


async def test_chart_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no tallies to chart"):
        await chart_png(bessemer(), [], cache=ChartCache(process=ChartProcess()))


def test_console_writes_the_attachment_and_prints_its_path(tmp_path: Path) -> None:
    out = io.StringIO()
    console = ConsoleAdapter(out=out, rich=False, save_dir=tmp_path / "charts")
    png = render_chart(bessemer(), bessemer_history())
    chart_file = Attachment("../bessemer-2021-12.png", png, "a chart")  # no escaping the folder
    console.show_reply(Reply("Chart of Bessemer, as of update #12.", attachment=chart_file))
    path = tmp_path / "charts" / "bessemer-2021-12.png"
    assert path.read_bytes() == png
    assert out.getvalue() == f"Chart of Bessemer, as of update #12.\nSaved: {path}\n"


async def test_console_saves_a_posted_attachment_under_the_message(tmp_path: Path) -> None:
    out = io.StringIO()
    console = ConsoleAdapter(out=out, rich=False, save_dir=tmp_path / "charts")
    chart_file = Attachment("bessemer-2021-12.png", b"\x89PNG fake", "a chart")
    channel = ChannelRef(Platform("console"), "local", "console")
    await console.post(channel, Notice("the final"), key="tb1", attachment=chart_file)
    await console.post(channel, Notice("an update"), key="tb2")
    path = tmp_path / "charts" / "bessemer-2021-12.png"
    assert path.read_bytes() == b"\x89PNG fake"
    assert out.getvalue() == (f"[admin] the final\nSaved: {path}\n[admin] an update\n")


def test_console_says_when_it_cannot_write(tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    out = io.StringIO()
    console = ConsoleAdapter(out=out, rich=False, save_dir=blocked)
    assert console.save(Attachment("x.png", b"png", "x")) is None
    assert f"Could not save {blocked / 'x.png'}: " in out.getvalue()


def test_docs_example_is_there() -> None:
    if os.environ.get("TALLYBOT_UPDATE_GOLDEN") == "1":
        DOCS_IMAGE.parent.mkdir(exist_ok=True)
        DOCS_IMAGE.write_bytes(render_chart(bessemer(), bessemer_history()))
    png = DOCS_IMAGE.read_bytes()
    check_png(png, bessemer())
