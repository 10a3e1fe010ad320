"""What Slack makes of a text object (or a message's ``text``): what a reader sees, and what
in it Slack would read as markup.

A model of Slack's documented rules, strict where they are silent:

- ``&``, ``<`` and ``>`` are control characters in every text object: ``<...>`` forms mentions
  (``<!channel>``, ``<@U1>``), links and dates, so a raw ``<`` or ``>`` or an ``&`` that does not
  start ``&amp;``, ``&lt;`` or ``&gt;`` is markup (tallybot's own dates, passed in ``ours``, are
  taken out first). The entities show as the characters;
- ``plain_text`` shows nothing else as markup, except ``:name:`` emoji codes unless ``emoji``
  is false;
- mrkdwn also formats between ``*``, ``_``, ``~`` or `````` markers that touch a word boundary
  (the start or end, a space, or punctuation: a zero-width space is none), links URLs
  (``scheme://``) unless ``verbatim`` is true (the model says a link anyway: a client may), and
  shows ``:name:`` as an emoji.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_ENTITY = re.compile(r"&(amp|lt|gt);")
_EMOJI = re.compile(r":[a-z0-9_+'-]+:", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z0-9+.-]://")
ZWSP = "\u200b"


def _boundary(ch: str) -> bool:
    return not ch or ch.isspace() or unicodedata.category(ch).startswith("P")


def markup(obj: dict[str, Any] | str, *, ours: tuple[str, ...] = ()) -> list[str]:
    """Every piece of markup Slack would find in a text object (or in mrkdwn text)."""
    kind, raw = ("mrkdwn", obj) if isinstance(obj, str) else (obj["type"], obj["text"])
    for piece in ours:
        raw = raw.replace(piece, " ")
    found = [f"control {m!r}" for m in re.findall(r"[<>]|&(?!amp;|lt;|gt;)", raw)]
    if kind == "plain_text":
        if not isinstance(obj, str) and obj.get("emoji") is not False:
            found += [f"emoji {m!r}" for m in _EMOJI.findall(raw)]
        return found
    found += [f"emoji {m!r}" for m in _EMOJI.findall(raw)]
    found += [f"link {m!r}" for m in _URL.findall(raw)]
    for i, ch in enumerate(raw):
        if ch not in "*_~`":
            continue
        before = raw[i - 1] if i else ""
        after = raw[i + 1] if i + 1 < len(raw) else ""
        opens = _boundary(before) and after != "" and not after.isspace()
        closes = _boundary(after) and before != "" and not before.isspace()
        if opens or closes:
            found.append(f"format {raw[max(0, i - 5) : i + 6]!r}")
    return found


def visible(obj: dict[str, Any] | str) -> str:
    """What a reader sees (mrkdwn: without the zero-width spaces that disarm its markers)."""
    kind, raw = ("mrkdwn", obj) if isinstance(obj, str) else (obj["type"], obj["text"])
    text = _ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m.group(1)], raw)
    return text.replace(ZWSP, "") if kind == "mrkdwn" else text


def text_objects(blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Every text object in ``blocks`` (header, section text and fields, context elements)."""
    found: list[dict[str, Any]] = []
    for block in blocks or []:
        if isinstance(block.get("text"), dict):
            found.append(block["text"])
        found += [f for f in block.get("fields") or [] if isinstance(f, dict)]
        found += [e for e in block.get("elements") or [] if e.get("type") != "image"]
    return found
