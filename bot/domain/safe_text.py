"""What every surface does first with text that may come from a source, a command or a user.

A count's title, a choice's label, a source's name or error, a user's name: any of them can hold
characters that are not text but instructions to the terminal or to the layout. ``clean``
removes those, and only those, so that each surface's own escaping (Discord markdown, Slack
mrkdwn, the console, the chart) then has plain characters to deal with:

- control characters (C0 and C1, DEL) other than newline and tab: an escape sequence would
  reach the operator's terminal, a NUL or a bell has no business in a message;
- the bidirectional embeddings, overrides and isolates (U+202A to U+202E, U+2066 to U+2069): a
  right-to-left override in a label would reverse the words after it ("Trojan Source",
  CVE-2021-42574). Right-to-left scripts still show right to left: the Unicode bidi algorithm
  needs no control characters for them, and the marks U+200E and U+200F stay;
- every line break becomes ``\\n`` (``\\r\\n``, ``\\r``, U+0085, U+2028, U+2029), so that the
  surfaces' rules for what starts a line (a heading, a quote, a list) see every line.

Everything else, zero-width joiners included (emoji sequences and several scripts need them),
is left exactly as typed.

>>> clean("Yes\\u202e (RWDSU)\\x1b[2J\\r\\nNo")
'Yes (RWDSU)[2J\\nNo'
"""

from __future__ import annotations

import re

_BREAKS = re.compile("\r\n|[\r\x85\u2028\u2029]")
_UNWANTED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: str) -> str:
    """``text`` without control characters and bidi overrides, every line break a ``\\n``."""
    return _UNWANTED.sub("", _BREAKS.sub("\n", text))
