"""What Discord makes of a text it renders as markdown (content, embed title, description,
field names and values): the characters a reader sees, and which of them are live markup.

A model of Discord's parser (simple-markdown with Discord's rules), strict where it is unsure:

- ``\\`` before any character that is not a letter, a digit or a space shows that character
  as it is (and the backslash not at all); a backslash before anything else shows itself;
- ``* _ ~ ` | [ ] < >`` that no backslash escapes are live: they may open bold, italics,
  underline, strikethrough, spoilers, code, masked links, autolinks, mentions, timestamps or
  custom emoji (the model does not look for the closing half: one live marker is enough);
- a scheme right before ``://`` (``https://``) is a link, which in message content also unfurls;
- at the start of a line (after spaces) ``#``, ``-#``, ``-``, ``*`` or ``+`` and a space, a
  number and ``.`` or ``)`` and a space, or ``>`` make a heading, subtext, a list or a quote;
- ``@everyone``, ``@here`` and ``@id`` look like mentions (whether they ping is up to
  ``allowed_mentions``, which the fake records apart).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPECIAL = frozenset("*_~`|[]<>")
_URL = re.compile(r"[A-Za-z0-9+.-]://")
_BLOCK = re.compile(r"^[ \t]*(#{1,3} |-# |[-*+] |\d+[.)] |>)")
_MENTION = re.compile(r"@(everyone|here|[!&]?\d+)")


@dataclass(frozen=True)
class Shown:
    text: str
    """What a reader sees."""
    live: tuple[bool, ...]
    """For each character of ``text``: True where it is live markup."""

    def live_in(self, start: int, end: int) -> str:
        pairs = zip(self.text[start:end], self.live[start:end], strict=True)
        return "".join(ch for ch, on in pairs if on)


def shown(markdown: str) -> Shown:
    text: list[str] = []
    live: list[bool] = []
    i = 0
    while i < len(markdown):
        ch = markdown[i]
        nxt = markdown[i + 1] if i + 1 < len(markdown) else ""
        if ch == "\\" and nxt and not nxt.isalnum() and not nxt.isspace():
            text.append(nxt)
            live.append(False)
            i += 2
            continue
        text.append(ch)
        live.append(ch in _SPECIAL)
        i += 1
    return Shown("".join(text), tuple(live))


def markup(markdown: str, *, ours: tuple[str, ...] = ()) -> list[str]:
    """Every piece of live markup in ``markdown``, except the exact substrings in ``ours``
    (tallybot's own timestamps, say), which are taken out first."""
    for piece in ours:
        markdown = markdown.replace(piece, " ")
    found: list[str] = []
    s = shown(markdown)
    found += [f"live {ch!r}" for ch, on in zip(s.text, s.live, strict=True) if on]
    found += [f"link {m.group()!r}" for m in _URL.finditer(markdown)]
    found += [f"block {m.group(1)!r}" for m in map(_BLOCK.match, markdown.split("\n")) if m]
    found += [f"mention {m.group()!r}" for m in _MENTION.finditer(markdown)]
    return found


def visible(markdown: str) -> str:
    """What a reader sees, with the zero-width space tallybot puts after an ``@`` taken out
    (to compare with what was typed)."""
    return shown(markdown).text.replace("@\u200b", "@")
