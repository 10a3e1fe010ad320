"""The largest legal count's messages fit every platform with every figure in them (issue 27
part 1): the title is what gives way, never the figures (a Telegram photo's caption is 1,024
characters; a Discord embed 6,000 in all; Slack 50 blocks and 150 characters of header)."""

from __future__ import annotations

import json
from datetime import timedelta

from adapters.discord.embeds import embed_problems, message_embed
from adapters.slack.blocks import message_blocks
from adapters.telegram.render import CAPTION_LIMIT, TEXT_LIMIT, caption, render, units
from bot.domain import format as fmt
from bot.domain.limits import MAX_CHOICES, MAX_LABEL, MAX_SOURCE_NAME, MAX_TITLE
from bot.domain.message import Message
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind, Tally, TallyState
from tests.fakes.slack_fake.limits import validate_blocks
from tests.helpers import T0


def largest(choices: int) -> tuple[Count, Message]:
    """A final count at every limit: the longest title and labels, the longest source name."""
    made = tuple(Choice(f"c{i}", f"{i:02d}" + "W" * (MAX_LABEL - 2)) for i in range(choices))
    count = Count(
        "largest",
        "T" * MAX_TITLE,
        made,
        DecisionRule(RuleKind.PLURALITY),
        received=10**12,
        status=CountStatus.FINAL,
    )
    votes = {c.id: 10**12 // 40 + 1000 * k for k, c in enumerate(made)}
    final = Tally(
        count.id,
        votes,
        T0 + timedelta(hours=9),
        "s" * MAX_SOURCE_NAME,
        received=sum(votes.values()),
        state=TallyState.FINAL,
        seq=7,
    )
    return count, fmt.for_status(count, final)


def figures(message: Message) -> list[str]:
    return [c.votes_text for c in message.choices]


def test_telegram_cuts_the_title_before_the_figures() -> None:
    for choices in (2, 6, MAX_CHOICES):
        _, message = largest(choices)
        text, photo = render(message).plain, caption(message).plain
        assert units(text) <= TEXT_LIMIT
        assert all(f in text for f in figures(message))
        assert units(photo) <= CAPTION_LIMIT
        if choices <= 6:  # as many as fit 1,024 characters at all: the title gave way first
            assert all(f in photo for f in figures(message)), photo
            assert photo.startswith("TTTTTTTTTTTTTTTTTTTTTTT")
            assert "Final tally" in photo


def test_discord_and_slack_keep_every_figure_within_their_limits() -> None:
    _, message = largest(MAX_CHOICES)
    embed = message_embed(message, ref="d-1")
    assert embed_problems(embed) == []
    shown = json.dumps(embed.to_dict(), ensure_ascii=False)
    assert all(f in shown for f in figures(message))
    blocks = message_blocks(message)
    assert validate_blocks(json.dumps(blocks)) is not None
    said = json.dumps(blocks, ensure_ascii=False)
    assert all(f in said for f in figures(message))
