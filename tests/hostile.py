"""Hostile text: what a count's title, a choice's label, a source's name or a user may hold.

Each surface must show every one of these exactly as typed (after ``bot.domain.safe_text.clean``:
no control characters, no bidi overrides), with no ping, link, formatting or terminal effect.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from bot.domain import format as fmt
from bot.domain.limits import MAX_LABEL, MAX_TITLE, cut
from bot.domain.message import Message, Moment, Timed
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally
from bot.domain.safe_text import clean
from tests.helpers import T0

LONG = "long " * 1200
"""6,000 characters: over every one of Discord's and Slack's limits for a single text."""

HOSTILE: tuple[str, ...] = (
    # the issue's own example
    "[masked](https://evil.example) <https://evil.example|click> **bold** ||spoiler|| # heading",
    # mentions and other <...> forms, Discord's and Slack's
    "@everyone @here <@111111111111111111> <@&222> <#333> </count status:444> <t:1:R> <:e:5>",
    "<!channel> <!here> <!everyone> <!subteam^S123> <@U123> <#C123|x> <!date^1^{ago}|x>",
    # inline markdown of every kind
    "*italic* _under_ __underline__ ~~strike~~ ~s~ `code` ```block``` \\*escaped\\* back\\slash",
    # what starts a line
    "# heading\n## h2\n### h3\n-# subtext\n- item\n* item\n+ item\n1. first\n2) second",
    "> quote\n>>> block quote\n    indented code",
    # bare URLs, which link and unfurl
    "see https://evil.example/unfurl and http://10.0.0.1:8080/x, ftp://x.example steam://x",
    # entities, emoji codes, rich markup and mathtext
    "&amp; &lt; &gt; & < > :joy: :skull_and_crossbones: [bold red]rich[/] [link=https://x]x[/link]",
    "$\\alpha^2$ costs $5 and $6",
    # invisible and right-to-left
    "zero\u200bwidth\u200cnon\u200djoiner\u2060wj\ufeffbom \u200eLRM \u200fRLM",
    "RLO \u202eevil\u202c PDF \u2067isolate\u2069 עברית العربية",
    # controls: a terminal escape, a bell, a NUL, carriage returns
    "ANSI \x1b[31mred\x1b[0m \x1b[2J\x07\x00 cr\r\nlf\rcr \u2028ls\u2029ps",
    LONG,
)


def typed(text: str) -> str:
    """What a surface must show for ``text``: it as typed, cleaned."""
    return clean(text)


SPECIALS = "\\*_~`|[]<>()#-+.:@!&;^$/ \n\t1a\u200b\u202e\x1b"
"""The characters that make markup somewhere, and a few that hide it."""
HOSTILE_TEXT = st.text(alphabet=st.sampled_from(SPECIALS) | st.characters(), max_size=80)
"""Any text, heavy in markup characters."""


def hostile_message(labels: list[str], title: str, source: str) -> Message:
    """The formatter's message for a count whose every text is hostile (with a status note).
    Texts past the limits (``bot.domain.limits``: no count holds them) are put in the message
    after it is made, as a renderer must cut them all the same."""
    count = Count(
        "x",
        cut(title if title.strip() else f"{title}x", MAX_TITLE),
        tuple(Choice(f"c{i}", cut(label, MAX_LABEL)) for i, label in enumerate(labels)),
        DecisionRule(RuleKind.PLURALITY),
    )
    votes = {f"c{i}": 3 * i for i in range(len(labels))}
    message = fmt.for_status(count, Tally("x", votes, T0, source, seq=2))
    note = Timed.of(Moment(T0, lead="Last checked ", relative=True), f"; source stale ({source})")
    typed_as = {f"c{i}": label for i, label in enumerate(labels)}
    choices = tuple(replace(c, label=typed_as[c.choice_id]) for c in message.choices)
    if len(title) > MAX_TITLE:
        message = replace(message, title=title)
    return replace(message, notes=(note,), choices=choices)
