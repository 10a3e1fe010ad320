"""Singular with 1 in what the renderers add around the formatter's words (issue 12)."""

from __future__ import annotations

from adapters.discord.embeds import message_embed
from adapters.slack.blocks import choice_text
from bot.domain import format as fmt
from bot.domain.message import ChoiceLine
from bot.domain.model import TallyState
from tests.helpers import bessemer, tally


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
