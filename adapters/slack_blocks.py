"""Block Kit rendering of the formatter's ``Message`` and of admin ``Notice``s.

Rendering only: every number and sentence is already in the ``Message``. Two rules hold for
every payload built here:

- Every text that comes from a source, a user or the configuration is escaped (``&`` ``<``
  ``>``), so that nothing can produce ``<!channel>``, ``<!here>``, ``<@U...>`` or a link; mrkdwn
  objects are also ``verbatim`` (no auto-linking of URLs or #channel names).
- Slack's limits are kept, by shortening with "…", never by failing: 50 blocks, 3000 characters
  per text object, 2000 per section field, 10 fields per section, 150 per header, 10 context
  elements. Lengths are counted in UTF-16 code units (what Slack's clients count), which is never
  less than Python's count of characters.
"""

from __future__ import annotations

from bot.adapter import Notice, Outgoing
from bot.commands import Reply
from bot.message import ChoiceLine, Message
from bot.words import noun

from .slack_payloads import Block, ContextBlock, HeaderBlock, Mrkdwn, SectionBlock

MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_FIELD = 2000
MAX_FIELDS = 10
MAX_HEADER = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_FALLBACK = 3000
"""The notification ``text`` (Slack accepts 40,000; a notification needs far less)."""
MAX_REPLY = 12_000
"""A command reply without blocks (lists, history)."""
ELLIPSIS = "…"


def escape(text: str) -> str:
    """Slack's three control characters as entities: the text can no longer form a mention,
    a special command (``<!channel>``) or a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def units(text: str) -> int:
    """Length in UTF-16 code units."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def clip(text: str, limit: int) -> str:
    """``text`` (already escaped) shortened to ``limit`` UTF-16 units with a trailing "…".

    The cut never splits an entity such as ``&amp;``, so escaping survives shortening.
    """
    if units(text) <= limit:
        return text
    room = limit - 1
    used = 0
    end = 0
    for i, ch in enumerate(text):
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > room:
            end = i
            break
    cut = text[:end]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + ELLIPSIS


def safe(text: str, limit: int) -> str:
    """Escaped, then shortened."""
    return clip(escape(text), limit)


def mrkdwn(text: str) -> Mrkdwn:
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def section(text: str) -> SectionBlock:
    return {"type": "section", "text": mrkdwn(clip(text, MAX_TEXT))}


def header(title: str) -> HeaderBlock:
    return {"type": "header", "text": {"type": "plain_text", "text": safe(title, MAX_HEADER)}}


def context(*texts: str) -> ContextBlock:
    return {"type": "context", "elements": [mrkdwn(t) for t in texts[:MAX_CONTEXT_ELEMENTS]]}


# --------------------------------------------------------------------------- Message


def choice_text(c: ChoiceLine, limit: int) -> str:
    """One choice: label, votes, share, the bar and what it still needs (escaped, clipped)."""
    mark = "✔ " if c.winner else ""
    label = f"*{clip(escape(c.label), limit // 3)}*"
    figures = f"{escape(c.votes_text)} {noun(c.votes, 'vote')} · {escape(c.share_text)}"
    bar = f"`{escape(c.bar)}`" if c.bar else ""
    note = f"_{escape(c.note)}_" if c.note else ""
    second = "  ".join(part for part in (bar, note) if part)
    text = f"{mark}{label}  {figures}" + (f"\n{second}" if second else "")
    return clip(text, limit)


def choice_blocks(choices: tuple[ChoiceLine, ...], room: int) -> list[Block]:
    """The choices in at most ``room`` blocks: one section each when they fit, else sections of
    up to 10 fields, else as many as fit and a last section saying how many were left out."""
    if not choices or room <= 0:
        return []
    if len(choices) <= room:
        return [section(choice_text(c, MAX_TEXT)) for c in choices]
    groups = -(-len(choices) // MAX_FIELDS)
    shown = choices
    if groups > room:
        shown = choices[: (room - 1) * MAX_FIELDS]
    out: list[Block] = []
    for start in range(0, len(shown), MAX_FIELDS):
        fields = [mrkdwn(choice_text(c, MAX_FIELD)) for c in shown[start : start + MAX_FIELDS]]
        out.append({"type": "section", "fields": fields})
    if len(shown) < len(choices):
        left = len(choices) - len(shown)
        out.append(section(f"_…and {left} more {noun(left, 'choice')} not shown._"))
    return out


def message_blocks(message: Message, *, intro: str | None = None) -> list[Block]:
    """A header (the title), the headline in bold, the choices, the detail lines, the footer."""
    top: list[Block] = []
    if intro:
        top.append(section(escape(intro)))
    if message.title.strip():
        top.append(header(message.title))
    if message.headline.strip():
        top.append(section(f"*{clip(escape(message.headline), MAX_TEXT - 2)}*"))
    bottom: list[Block] = []
    lines = [escape(line) for line in message.lines if line.strip()]
    if lines:
        bottom.append(section("\n".join(lines)))
    if message.footer.strip():
        bottom.append(context(safe(message.footer, MAX_TEXT)))
    room = MAX_BLOCKS - len(top) - len(bottom)
    return [*top, *choice_blocks(message.choices, room), *bottom]


def notice_blocks(notice: Notice) -> list[Block]:
    return [section(f":warning: *tallybot* · {escape(notice.text)}")]


def blocks_for(content: Outgoing) -> list[Block]:
    if isinstance(content, Notice):
        return notice_blocks(content)
    return message_blocks(content)


def fallback_text(content: Outgoing) -> str:
    """The plain ``text`` that notifications and screen readers show: the headline."""
    if isinstance(content, Notice):
        return safe(f"tallybot: {content.text}", MAX_FALLBACK)
    return safe(content.headline or content.title or content.count_id, MAX_FALLBACK)


def reply_payload(reply: Reply) -> tuple[str, list[Block] | None]:
    """A command's reply as (text, blocks): blocks when it carries a ``Message``."""
    if reply.message is None:
        return safe(reply.text or "Done.", MAX_REPLY), None
    intro = reply.text if reply.text != reply.message.headline else None
    blocks = message_blocks(reply.message, intro=intro)
    return safe(reply.text or reply.message.headline, MAX_FALLBACK), blocks
