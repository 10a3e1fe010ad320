"""Each surface's escaping, on its own: hostile text shows exactly as typed and nothing in it is
markup, on Discord, on Slack, on the console and in plain text.

What Discord and Slack would make of a text is modelled in the fakes
(``tests/fakes/discord_fake/markdown.py``,
``tests/fakes/slack_fake/markup.py``); the adapter
tests (``tests/adapters/test_*_hostile.py``) check the same through the real clients.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest
from hypothesis import given

from adapters.console.adapter import ConsoleAdapter
from adapters.discord import text as discord_text
from adapters.slack import blocks as slack_text
from bot.commands.request import Reply
from bot.domain.message import Moment, Timed
from bot.domain.render_text import show
from bot.domain.safe_text import clean
from tests.fakes.discord_fake import markdown
from tests.fakes.slack_fake import markup
from tests.hostile import HOSTILE, HOSTILE_TEXT, typed

AT = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)
hostile_text = HOSTILE_TEXT


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_discord_markdown_shows_hostile_text_as_typed(text: str) -> None:
    escaped = discord_text.escape(text)
    assert markdown.markup(escaped) == []
    assert markdown.visible(escaped) == typed(text)


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_discord_plain_surfaces_take_the_text_as_typed(text: str) -> None:
    shown = discord_text.plain(text)  # footers, autocomplete: Discord renders no markdown there
    assert shown.replace("@\u200b", "@") == typed(text)
    assert shown.count("\\") == typed(text).count("\\")  # no backslash would vanish there


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_slack_plain_text_and_mrkdwn_show_hostile_text_as_typed(text: str) -> None:
    plain = {"type": "plain_text", "text": slack_text.plain(text), "emoji": False}
    assert markup.markup(plain) == []
    assert markup.visible(plain) == typed(text)
    neutral = slack_text.mrkdwn(text)
    assert markup.markup(neutral) == []
    assert markup.visible(neutral) == typed(text).replace("\u200b", "")


@given(hostile_text)
def test_discord_escape_holds_for_any_text(text: str) -> None:
    escaped = discord_text.escape(text)
    assert markdown.markup(escaped) == []
    assert markdown.visible(escaped) == clean(text).replace("@\u200b", "@")


@given(hostile_text)
def test_slack_escapes_hold_for_any_text(text: str) -> None:
    assert (
        markup.markup({"type": "plain_text", "text": slack_text.plain(text), "emoji": False}) == []
    )
    assert markup.visible({"type": "plain_text", "text": slack_text.plain(text)}) == clean(text)
    assert markup.markup(slack_text.mrkdwn(text)) == []
    assert markup.visible(slack_text.mrkdwn(text)) == clean(text).replace("\u200b", "")


def test_the_models_do_see_markup() -> None:
    """The checks above can fail: unescaped, the same texts are markup to the models."""
    for text in HOSTILE[:8]:
        assert markdown.markup(text) != [], text
    for text in (*HOSTILE[:4], *HOSTILE[5:8]):  # (Slack has no headings or lists)
        assert markup.markup(text) != [], text
    assert markup.markup({"type": "plain_text", "text": "<!here>"}) == [
        "control '<'",
        "control '>'",
    ]
    assert markup.markup({"type": "plain_text", "text": ":joy:"}) == ["emoji ':joy:'"]
    assert markdown.markup("\\*fine\\* but @everyone") == ["mention '@everyone'"]


def test_clean_drops_controls_and_bidi_overrides_only() -> None:
    assert clean("a\x1b[2Jb\x07\x00c") == "a[2Jbc"
    assert clean("RLO \u202eevil\u202c \u2067x\u2069") == "RLO evil x"
    assert clean("cr\r\nlf\rcr\u2028ls\u2029ps\x85nel") == "cr\nlf\ncr\nls\nps\nnel"
    kept = "tab\tzero\u200bwidth\u200dzwj \u200eLRM\u200f עברית 👩‍👩‍👧"
    assert clean(kept) == kept


def test_times_are_each_surfaces_own() -> None:
    footer = Timed.of("Final tally · source: x", Moment(AT, lead=" · as of "), " · update #3")
    checked = Timed.of(Moment(AT, lead="Last checked ", relative=True), ".")
    assert str(footer) == "Final tally · source: x · as of 8 Apr 2021 18:00 UTC · update #3"
    assert footer.show(discord_text.plain, None) == "Final tally · source: x · update #3"
    assert discord_text.show(checked) == "Last checked <t:1617904800:R>."
    assert discord_text.show(footer).endswith(" · as of <t:1617904800:f> · update #3")
    assert slack_text.date(footer.moments[0]) == (
        "<!date^1617904800^{date_short_pretty} at {time}|8 Apr 2021 18:00 UTC>"
    )
    assert slack_text.date(checked.moments[0]) == "<!date^1617904800^{ago}|8 Apr 2021 18:00 UTC>"


def test_the_console_prints_hostile_text_as_typed_in_either_mode() -> None:
    for rich in (True, False):
        out = io.StringIO()
        console = ConsoleAdapter(out=out, rich=rich, zone=UTC)
        for text in HOSTILE:
            console.show_reply(Reply(text, ok=False))
            console.note(text)
            console.show_reply(
                Reply(str(Timed.of(text, Moment(AT))), timed=Timed.of(text, Moment(AT)))
            )
        printed = out.getvalue()
        assert "\x1b[31m" not in printed  # the injected sequences never reach the terminal
        assert "\x1b[2J" not in printed
        assert "\x07" not in printed
        flat = " ".join(printed.split())  # the terminal console wraps at 80 columns
        assert "[bold red]rich[/] [link=https://x]x[/link]" in flat  # rich markup as typed
        assert "RLO evil PDF isolate עברית" in flat
        assert " ".join(f"{HOSTILE[0]}8 Apr 2021 18:00 UTC".split()) in flat
        if not rich:
            assert "\x1b" not in printed


def test_plain_text_shows_times_in_the_zone_given() -> None:
    from zoneinfo import ZoneInfo

    text = Timed.of("as of ", Moment(AT), "; ", Moment(datetime(2021, 1, 8, 18, tzinfo=UTC)))
    assert (
        show(text, ZoneInfo("America/Chicago"))
        == "as of 8 Apr 2021 13:00 CDT; 8 Jan 2021 12:00 CST"
    )
    assert (
        show(text, ZoneInfo("Asia/Kolkata")) == "as of 8 Apr 2021 23:30 IST; 8 Jan 2021 23:30 IST"
    )
    assert show(text) == "as of 8 Apr 2021 18:00 UTC; 8 Jan 2021 18:00 UTC"


def test_the_chart_draws_hostile_text_as_typed() -> None:
    """No mathematics from ``$``, no control character reaching the font (matplotlib warns of
    a missing glyph, an error here), right-to-left and zero-width text drawn as it is."""
    from bot.charts.chart import render_chart
    from bot.domain.chart_figure import chart_figure
    from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally

    labels = [*HOSTILE[:4], *HOSTILE[8:12]]
    count = Count(
        "x",
        HOSTILE[0],
        tuple(Choice(f"c{i}", label) for i, label in enumerate(labels)),
        DecisionRule(RuleKind.PLURALITY),
    )
    votes = {f"c{i}": i + 1 for i in range(len(labels))}
    history = [Tally("x", votes, AT, HOSTILE[11], seq=1)]
    fig = chart_figure(count, history)
    drawn = [t.get_text() for t in fig.texts + fig.axes[0].texts]
    assert typed(HOSTILE[0]).startswith(drawn[0].removesuffix("…"))  # shrunk to fit, cut short
    assert any(t.startswith("$\\alpha^2$") for t in drawn), drawn  # as typed, not maths
    assert all(t.get_parse_math() is False for t in fig.texts + fig.axes[0].texts)
    assert not any("\x1b" in t or "\u202e" in t for t in drawn)
    assert render_chart(count, history)[:8] == b"\x89PNG\r\n\x1a\n"
