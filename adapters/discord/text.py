r"""Text on Discord: shown exactly as typed, never as markup, links or pings; times in each
reader's own zone.

Discord renders markdown in message content, embed titles, descriptions and fields:
``**bold**``, ``__underline__``, ``~~strike~~``, ``||spoiler||``, `` `code` ``, masked links
``[text](url)``, autolinks ``<https://...>``, bare URLs (which also unfurl into previews),
mentions ``<@id>`` ``<#id>`` ``<@&id>`` ``</cmd:id>``, timestamps ``<t:...>``, custom emoji
``<:name:id>``, and at the start of a line headings ``#``, subtext ``-#``, lists ``-`` ``*``
``+`` ``1.`` and quotes ``>``. A backslash before any ASCII punctuation shows that character as
it is, so ``escape`` puts one before every character that could open one of those, wherever it
could, and Discord shows the text exactly as typed:

- ``\ * _ ~ ` | [ ] < >`` everywhere (``<`` alone disarms every ``<...>`` form);
- the colon of ``://``: ``https\://evil.example`` is no URL to Discord, so it neither links
  nor unfurls;
- at the start of a line (after any spaces): ``#``, ``-`` and ``+``, and the ``.`` or ``)``
  after a number when a space follows (``1. `` would start a list; ``70.5%`` does not);
- ``@everyone``, ``@here`` and ``@id`` get a zero-width space after the ``@``: they could
  not ping anyway (every message goes out with ``allowed_mentions`` none), but they do not look
  like pings either.

Embed footers, the names of autocomplete choices and an attachment's alt text are plain text
to Discord (no markdown): ``plain`` leaves them as typed (a backslash there would show).

Both first ``clean`` the text (``bot.domain.safe_text``: no control characters, no bidi overrides).

>>> print(escape("[masked](https://evil.example) **bold** ||spoiler||"))
\[masked\](https\://evil.example) \*\*bold\*\* \|\|spoiler\|\|
>>> print(escape("# heading\n1. list"))
\# heading
1\. list
"""

from __future__ import annotations

import re

from bot.platform import Moment, Timed, clean, unix

_SPECIAL = re.compile(r"([\\*_~`|\[\]<>])")
_URL = re.compile(r"(?<=[A-Za-z0-9+.-]):(?=//)")
_LINE_START = re.compile(r"(?m)^([ \t]*)([#+-])")
_NUMBERED = re.compile(r"(?m)^([ \t]*\d+)([.)])(?=\s|$)")
# discord.utils.escape_mentions only escapes ids of 17 to 20 digits; escape any id here.
_MENTION = re.compile(r"@(everyone|here|[!&]?\d+)")


def defuse_mentions(text: str) -> str:
    """@everyone, @here and @id with a zero-width space after the ``@``."""
    return _MENTION.sub("@\u200b\\1", text)


def escape(text: str) -> str:
    """``text`` for a surface where Discord renders markdown, showing exactly as typed."""
    text = _SPECIAL.sub(r"\\\1", clean(text))
    text = _URL.sub(r"\\:", text)
    text = _LINE_START.sub(r"\1\\\2", text)
    text = _NUMBERED.sub(r"\1\\\2", text)
    return defuse_mentions(text)


def plain(text: str) -> str:
    """``text`` for a surface that Discord shows as plain text (footers, autocomplete)."""
    return defuse_mentions(clean(text))


def time(moment: Moment) -> str:
    """A time in each reader's own zone and language: ``<t:UNIX:f>``, or ``<t:UNIX:R>`` ("3
    minutes ago") for a moment best read relative to now."""
    return f"<t:{unix(moment.at)}:{'R' if moment.relative else 'f'}>"


def show(text: Timed) -> str:
    """Timed text for a markdown surface: the text escaped, the times as Discord timestamps."""
    return text.show(escape, time)


def trim(text: str) -> str:
    """``text`` (escaped) without a dangling backslash at its end, where a cut left one."""
    stripped = text.rstrip("\\")
    return stripped + "\\" * ((len(text) - len(stripped)) // 2 * 2)
