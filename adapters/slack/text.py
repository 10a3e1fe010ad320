"""Text on Slack: shown exactly as typed, never as markup, links or pings; times in each
reader's own zone.

Slack reads ``&``, ``<`` and ``>`` as control characters in every text object (``<!channel>``,
``<@U123>``, ``<https://x|label>``, ``<!date...>``): ``plain`` turns them into the entities
Slack shows as the characters themselves. That is all a ``plain_text`` object needs, and
tallybot puts every text that may quote a title, a label, a source or a user into
``plain_text`` objects (headers, sections, fields and context elements all take them), with
``emoji`` off so that ``:joy:`` stays as typed.

``mrkdwn`` is for the few places that take nothing but mrkdwn: a message's notification
``text`` and a file's comment. mrkdwn has no escape character for its formatting, so ``mrkdwn``
puts a zero-width space on both sides of every ``*``, ``_``, ``~`` and `````: mrkdwn formats
only between markers that touch a word boundary, and a zero-width space is none; likewise
after the colon of ``://`` (no link) and of ``:name:`` (no emoji), and ``>`` is already
``&gt;`` (no quote).

``date`` is Slack's date markup, ``<!date^UNIX^{date_short_pretty} at {time}|fallback>``
(``{ago}`` for a moment best read relative to now): each reader sees the time in their own
zone, and the fallback (UTC) where a client cannot. It works in mrkdwn only, so a text with
times becomes a context block whose text runs are ``plain_text`` and whose times are mrkdwn.

Everything first goes through ``bot.domain.safe_text.clean`` (no control characters, no bidi
overrides).

>>> plain("Yes <!here> & <https://x.example|x>")
'Yes &lt;!here&gt; &amp; &lt;https://x.example|x&gt;'
>>> mrkdwn("*bold* `code`").replace(ZWSP, "|")
'|*|bold|*| |`|code|`|'

"""

from __future__ import annotations

import re

from bot.platform import Moment, clean, unix, utc_time

ZWSP = "\u200b"
_FORMATTING = re.compile(r"([*_~`])")
_COLON = re.compile(r":(?=//|[a-z0-9_+'-]+:)", re.IGNORECASE)


def plain(text: str) -> str:
    """``text`` for a ``plain_text`` object (or any text): ``& < >`` as entities."""
    return clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn(text: str) -> str:
    """``text`` for a mrkdwn-only place, shown as typed (see the module's docstring)."""
    text = _COLON.sub(":" + ZWSP, plain(text))
    return _FORMATTING.sub(ZWSP + r"\1" + ZWSP, text)


def date(moment: Moment) -> str:
    """A time in each reader's own zone (mrkdwn), with its UTC wording as the fallback. A time
    ahead worded relative to when it was written ("in 10 hours") shows those words: Slack
    documents ``{ago}`` for times past only."""
    if moment.relative and moment.words:
        return mrkdwn(moment.words)
    shown = "{ago}" if moment.relative else "{date_short_pretty} at {time}"
    return f"<!date^{unix(moment.at)}^{shown}|{utc_time(moment)}>"
