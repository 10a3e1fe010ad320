"""Text in the Slack-compatible and Teams bodies: shown as typed, never as markup, a link or a
ping, on every receiver that takes the format.

Slack reads ``&``, ``<`` and ``>`` as control characters (``<!channel>``, ``<@U1>``,
``<https://x|label>``): they go as the entities Slack shows as the characters. Mattermost
takes the same body but reads Markdown, in which ``@channel``, ``@all``, ``@here`` and
``@name`` ping and a URL becomes a link; Teams' Adaptive Cards read a Markdown subset too.
None of the three has an escape that all the others honour, so a zero-width space breaks
every construct instead: after each ``@`` (no mention), after the colon of ``://`` and inside
``www.`` (no link), on both sides of each ``* _ ~ ` [ ] ( ) # |`` (no formatting, no link
text); ``>`` is already ``&gt;`` in Slack's (no quote). Everything first goes through
``clean`` (no control characters, no bidi overrides).

>>> slack("<!here> @all *x* https://e.example").replace(ZWSP, "|")
'&lt;!here&gt; @|all |*|x|*| https:|//e.example'
"""

from __future__ import annotations

import re

from bot.platform import clean

ZWSP = "\u200b"
_MARKS = re.compile(r"([*_~`\[\]()#|])")
_BREAK_AFTER = re.compile(r"(@|://?|www\.)", re.IGNORECASE)


def _neutral(text: str) -> str:
    text = _MARKS.sub(ZWSP + r"\1" + ZWSP, text)
    return _BREAK_AFTER.sub(lambda m: m.group(1)[0] + ZWSP + m.group(1)[1:], text)


def slack(text: str) -> str:
    """``text`` for a Slack or Mattermost incoming webhook's ``text``."""
    escaped = clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _neutral(escaped)


def teams(text: str) -> str:
    """``text`` for an Adaptive Card's TextBlock or fact (Teams' Markdown subset; a ``<``
    followed by a zero-width space starts no ``<at>`` mention tag)."""
    return _neutral(clean(text)).replace("<", "<" + ZWSP)
