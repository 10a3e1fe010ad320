"""Singular with 1 in what the renderers add around the formatter's words (issue 12)."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

from adapters.discord.embeds import message_embed
from adapters.slack.blocks import choice_text, message_blocks
from adapters.telegram.render import finish, message_runs
from bot.domain import format as fmt
from bot.domain.detect import Accepted, detect
from bot.domain.message import ChoiceLine, Message
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.render_text import render
from bot.web.view import view
from tests.helpers import T0, bessemer, tally


def line(votes: int) -> ChoiceLine:
    return ChoiceLine("yes", "Yes", votes, fmt.n(votes), "50.0%", 0.5, "", "", False, False, 0)


def test_slack_says_one_vote() -> None:
    assert "1 vote · 50.0%" in choice_text(line(1))
    assert "1,100 votes · 50.0%" in choice_text(line(1100))


def test_discord_says_one_vote() -> None:
    message = fmt.for_status(bessemer(), tally(1, 2, state=TallyState.PAUSED))
    values = [f.value for f in message_embed(message).fields]
    assert values[0] is not None
    assert values[0].startswith("**1** vote · ")
    assert values[1] is not None
    assert values[1].startswith("**2** votes · ")


# Issue 24: a correction, and challenges sustained, in what every surface shows.


def corrected_call() -> Message:
    """``edit ratify threshold=3/4`` after Ratify clinched two-thirds, with challenges
    sustained: the message the subscribers get."""
    was = Count(
        "ratify",
        "Contract vote",
        (Choice("yes", "Ratify"), Choice("no", "Reject")),
        DecisionRule(RuleKind.THRESHOLD, tie_holder="no", threshold=Fraction(2, 3)),
        received=1405,
    )
    count = replace(was, rule=replace(was.rule, threshold=Fraction(3, 4)))
    last = Tally("ratify", {"yes": 1000, "no": 400}, T0, "admin ana", sustained=5, seq=1)
    again = replace(last, seq=2)
    d = detect(count, last, again, was=was)
    assert isinstance(d, Accepted)
    return fmt.for_update(count, d, 1)


CORRECTED = "Rule corrected to three-quarters: the earlier call for Ratify no longer holds; "
SUSTAINED = "5 challenges sustained (not counted)"


def test_every_renderer_shows_the_correction_and_the_sustained_challenges() -> None:
    message = corrected_call()
    assert message.headline.startswith(CORRECTED)
    assert "Rule corrected to three-quarters." in message.lines
    embed = message_embed(message)
    assert embed.description is not None
    slack = json.dumps(message_blocks(message), ensure_ascii=False)
    telegram = finish(message_runs(message)).plain
    console = render(message)
    for shown in (embed.description, slack, telegram, console):
        assert CORRECTED in shown
        assert "Rule corrected to three-quarters." in shown
        assert SUSTAINED in shown
    page = view_of(message)  # the history says what was published; the figures the rest
    assert CORRECTED in page
    assert SUSTAINED in page


def view_of(message: Message) -> str:
    """What the public page shows of the count after the correction: its history's entry
    (the headline as published) and the status lines."""
    count = Count(
        "ratify",
        "Contract vote",
        (Choice("yes", "Ratify"), Choice("no", "Reject")),
        DecisionRule(RuleKind.THRESHOLD, tie_holder="no", threshold=Fraction(3, 4)),
        received=1405,
    )
    shown = Tally(
        "ratify",
        {"yes": 1000, "no": 400},
        T0,
        "admin ana",
        sustained=5,
        seq=2,
        correction=True,
        headline=message.headline,
    )
    v = view(count, [shown], None, chart_url=lambda seq: "", narrow_url=lambda seq: "")
    assert v.entry is not None
    return "\n".join([v.entry.headline, *v.lines, v.description])
