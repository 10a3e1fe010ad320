"""The limits on the text a count is made of, and on what a subscription says.

Like ``MAX_FIGURE`` for figures, each limit is far above any real use and low enough that every
message with the figures in it fits every platform (a Telegram message is 4,096 characters, a
Discord embed's title 256 and its whole 6,000, a Slack header 150) and that a chart draws in a
bounded time. They are checked wherever text enters: the config, chat (commands and forms), the
push API and the store all build a :class:`~bot.domain.model.Count`, which checks its own
(:func:`count_problem`); a source's name is checked by the config, a subscription's words by the
command grammar. Over a limit is a one-line error naming the field and the limit
(:func:`too_long`). Lengths are in characters (code points), as a reader counts them.

The documentation's reference of limits (``docs/reference/limits.md``) lists them, with their
values; ``tests/test_docs_reference.py`` holds the two in step.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_TITLE = 120
"""The longest title of a count: a headline, not a paragraph."""
MAX_LABEL = 100
"""The longest label of a choice ("Retail, Wholesale and Department Store Union" is 45)."""
MAX_CHOICE_ID = 32
"""The longest choice id (``yes``, ``ruiz``)."""
MAX_CHOICES = 20
"""The most choices a count has."""
MAX_SOURCE_NAME = 64
"""The longest name of a source (the config's ``name``; the footer's "source: ...")."""
MAX_WANTS = 200
"""The longest a subscription's words may be, all of them with a space between
(``events close=2% mention=@organisers thread``)."""

MAX_FOLLOWS = 50
"""The most counts one person follows on a platform (``follow``): a night's counts, not a
crawl of every count there is."""
MAX_FOLLOWERS = 100_000
"""The most people following one count (``follow``): a final to all of them is this many
direct messages, sent under the platform's budget (minutes on Telegram, an hour on Discord)."""


def too_long(field: str, text: str, limit: int) -> str | None:
    """What is wrong with ``text`` as ``field``: None when it is at most ``limit`` characters.

    >>> too_long("title", "Bessemer", MAX_TITLE) is None
    True
    >>> too_long("title", "x" * 2001, MAX_TITLE)
    'the title is 2,001 characters long: at most 120'
    """
    if len(text) <= limit:
        return None
    return f"the {field} is {len(text):,} characters long: at most {limit:,}"


def count_problem(title: str, labels: Sequence[str], choice_ids: Sequence[str]) -> str | None:
    """The first limit a count's text is over, in words; None when it is within them all."""
    if len(labels) > MAX_CHOICES:
        return f"a count has at most {MAX_CHOICES} choices, got {len(labels):,}"
    found = too_long("title", title, MAX_TITLE)
    for choice_id, label in zip(choice_ids, labels, strict=True):
        field = f"label of choice {choice_id[:MAX_CHOICE_ID]!r}"
        found = found or too_long(field, label, MAX_LABEL)
    return found


def cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when it was longer: for
    text stored before the limits, and names that come from a platform (a user's name).

    >>> cut("Bessemer", 5), cut("Bessemer", 8)
    ('Bess…', 'Bessemer')
    """
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
