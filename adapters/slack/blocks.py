"""Block Kit rendering of the formatter's ``Message``, of admin ``Notice``s and of replies.

Rendering only: every number and sentence is already in the ``Message``. Three rules hold for
every payload built here:

- Every text that may quote a source, a user or the configuration is a ``plain_text`` object,
  its ``& < >`` escaped (``plain``, below): Slack shows it exactly as typed, with no
  mention, link, bold, code or quote in it. mrkdwn carries only tallybot's own markup: the
  dates, and the neutralised notification ``text``.
- Times are Slack dates (``<!date^...>``), shown in each reader's own zone: a text with times
  becomes a context block, its words in ``plain_text`` elements and its times in mrkdwn ones.
- Slack's limits are kept, by shortening with "…", never by failing: 50 blocks, 3000 characters
  per text object, 2000 per section field, 10 fields per section, 150 per header, 10 context
  elements. Lengths are counted in UTF-16 code units (what Slack's clients count), which is never
  less than Python's count of characters.
"""

from __future__ import annotations

import re

from bot.platform import (
    ChoiceLine,
    Message,
    Moment,
    Notice,
    Outgoing,
    Reply,
    Timed,
    clean,
    fitting,
    noun,
    units,
    unix,
    utc_time,
)

from .payloads import Block, ContextBlock, HeaderBlock, Mrkdwn, PlainText, SectionBlock

# Text on Slack: shown exactly as typed, never as markup, links or pings; times in each
# reader's own zone.
#
# Slack reads ``&``, ``<`` and ``>`` as control characters in every text object (``<!channel>``,
# ``<@U123>``, ``<https://x|label>``, ``<!date...>``): ``plain`` turns them into the entities
# Slack shows as the characters themselves. That is all a ``plain_text`` object needs, and
# tallybot puts every text that may quote a title, a label, a source or a user into
# ``plain_text`` objects (headers, sections, fields and context elements all take them), with
# ``emoji`` off so that ``:joy:`` stays as typed.
#
# ``mrkdwn`` is for the few places that take nothing but mrkdwn: a message's notification
# ``text`` and a file's comment. mrkdwn has no escape character for its formatting, so ``mrkdwn``
# puts a zero-width space on both sides of every ``*``, ``_``, ``~`` and `````: mrkdwn formats
# only between markers that touch a word boundary, and a zero-width space is none; likewise
# after the colon of ``://`` (no link) and of ``:name:`` (no emoji), and ``>`` is already
# ``&gt;`` (no quote).
#
# ``date`` is Slack's date markup, ``<!date^UNIX^{date_short_pretty} at {time}|fallback>``
# (``{ago}`` for a moment best read relative to now): each reader sees the time in their own
# zone, and the fallback (UTC) where a client cannot. It works in mrkdwn only, so a text with
# times becomes a context block whose text runs are ``plain_text`` and whose times are mrkdwn.
#
# Everything first goes through ``bot.domain.safe_text.clean`` (no control characters, no bidi
# overrides).
#
# >>> plain("Yes <!here> & <https://x.example|x>")
# 'Yes &lt;!here&gt; &amp; &lt;https://x.example|x&gt;'
# >>> mrkdwn("*bold* `code`").replace(ZWSP, "|")
# '|*|bold|*| |`|code|`|'

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


MAX_BLOCKS = 50
MAX_TEXT = 3000
MAX_FIELD = 2000
MAX_FIELDS = 10
MAX_HEADER = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_FALLBACK = 3000
"""The notification ``text`` (Slack accepts 40,000; a notification needs far less)."""
MAX_FILE_TITLE = 255
"""The longest file title shown whole (Slack cuts longer ones)."""
MAX_ALT_TEXT = 1000
"""The longest image description (alt_txt) Slack takes for an upload."""
MAX_REPLY = 12_000
USER_GROUP = re.compile(r"^S[A-Z0-9]{2,20}$")
"""A Slack user group's id."""
"""A command reply's text (lists, history), over as many sections as it takes."""
ELLIPSIS = "…"

escape = plain
"""The escaping of every text here (``adapters.slack.blocks.plain``)."""


def clip(text: str, limit: int) -> str:
    """``text`` (already escaped) shortened to ``limit`` UTF-16 units with a trailing "…".

    The cut never splits an entity such as ``&amp;``, so escaping survives shortening.
    """
    if units(text) <= limit:
        return text
    cut = text[: fitting(text, limit - 1)]
    amp = cut.rfind("&")
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut + ELLIPSIS


def safe(text: str, limit: int) -> str:
    """Escaped for ``plain_text``, then shortened."""
    return clip(plain(text), limit)


def plain_text(text: str, limit: int = MAX_TEXT) -> PlainText:
    """A ``plain_text`` object of ``text`` as typed (escaped, shortened, no emoji codes)."""
    return {"type": "plain_text", "text": safe(text, limit) or " ", "emoji": False}


def mrkdwn_text(text: str) -> Mrkdwn:
    """A mrkdwn object of tallybot's own markup (``text`` is markup already)."""
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def section(text: str) -> SectionBlock:
    return {"type": "section", "text": plain_text(text)}


def header(title: str) -> HeaderBlock:
    return {"type": "header", "text": plain_text(title, MAX_HEADER)}


def timed_context(text: Timed) -> ContextBlock:
    """One line with times in it: its words as ``plain_text``, its times as Slack dates."""
    elements: list[PlainText | Mrkdwn] = []
    words = ""
    for part in text.parts:
        if isinstance(part, str):
            words += part
            continue
        words += part.lead
        if words.strip():
            elements.append(plain_text(words.strip()))
        elements.append(mrkdwn_text(date(part)))
        words = ""
    if words.strip():
        elements.append(plain_text(words.strip()))
    if len(elements) > MAX_CONTEXT_ELEMENTS:  # more times than fit: all of it in UTC words
        elements = [plain_text(str(text))]
    return {"type": "context", "elements": elements}


def text_blocks(text: Timed, room: int = MAX_BLOCKS) -> list[Block]:
    """Text in at most ``room`` blocks: runs of lines without times as sections (3000 units at
    most each), each line with times as a context block; what does not fit is cut short."""
    blocks: list[Block] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            blocks.append(section("\n".join(run)))
            run.clear()

    for line in text.lines():
        if line.moments:
            flush()
            blocks.append(timed_context(line))
        elif units(plain("\n".join([*run, str(line)]))) > MAX_TEXT:
            flush()
            run.append(str(line))
        else:
            run.append(str(line))
    flush()
    if len(blocks) > room:
        blocks = [*blocks[: room - 1], section("…")]
    return blocks


# --------------------------------------------------------------------------- Message


def choice_text(c: ChoiceLine) -> str:
    """One choice: label, votes, share, the bar and what it still needs."""
    mark = "✔ " if c.winner else ""
    second = "  ".join(part for part in (c.bar, c.note) if part)
    text = f"{mark}{c.label} — {c.votes_text} {noun(c.votes, 'vote')} · {c.share_text}"
    return text + (f"\n{second}" if second else "")


def choice_blocks(choices: tuple[ChoiceLine, ...], room: int) -> list[Block]:
    """The choices in at most ``room`` blocks: one section each when they fit, else sections of
    up to 10 fields, else as many as fit and a last section saying how many were left out."""
    if not choices or room <= 0:
        return []
    if len(choices) <= room:
        return [section(choice_text(c)) for c in choices]
    groups = -(-len(choices) // MAX_FIELDS)
    shown = choices
    if groups > room:
        shown = choices[: (room - 1) * MAX_FIELDS]
    out: list[Block] = []
    for start in range(0, len(shown), MAX_FIELDS):
        fields: list[PlainText | Mrkdwn] = [
            plain_text(choice_text(c), MAX_FIELD) for c in shown[start : start + MAX_FIELDS]
        ]
        out.append({"type": "section", "fields": fields})
    if len(shown) < len(choices):
        left = len(choices) - len(shown)
        out.append(section(f"…and {left} more {noun(left, 'choice')} not shown."))
    return out


def message_blocks(message: Message, *, intro: Timed | None = None) -> list[Block]:
    """A header (the title), the headline, the choices, the detail lines, the notes (with times),
    the footer (with its time)."""
    top: list[Block] = []
    if intro is not None:
        top.extend(text_blocks(intro, room=5))
    if clean(message.title).strip():
        top.append(header(message.title))
    if clean(message.headline).strip():
        top.append(section(message.headline))
    bottom: list[Block] = []
    lines = [line for line in message.lines if clean(line).strip()]
    if lines:
        bottom.append(section("\n".join(lines)))
    for note in message.notes[:5]:
        bottom.extend(text_blocks(note, room=1))
    if str(message.footer).strip():
        bottom.append(timed_context(message.footer))
    room = MAX_BLOCKS - len(top) - len(bottom)
    return [*top, *choice_blocks(message.choices, room), *bottom]


def notice_blocks(notice: Notice) -> list[Block]:
    return [section(f"⚠️ tallybot · {notice.text}")]


def ping(content: Outgoing) -> str | None:
    """``<!subteam^ID>`` for the user group a subscription pings on this post (its calls and
    its final), when it has one: the only mention tallybot ever writes."""
    mention = content.mention if isinstance(content, Message) else None
    if mention is None or not USER_GROUP.match(mention):
        return None
    return f"<!subteam^{mention}>"


def blocks_for(content: Outgoing) -> list[Block]:
    if isinstance(content, Notice):
        return notice_blocks(content)
    blocks = message_blocks(content)
    group = ping(content)
    if group is None:
        return blocks
    pinged: SectionBlock = {"type": "section", "text": {"type": "mrkdwn", "text": group}}
    return [pinged, *blocks[: MAX_BLOCKS - 1]]


def fallback_text(content: Outgoing) -> str:
    """The ``text`` that notifications and screen readers show: the headline (mrkdwn to Slack,
    so neutralised), after the user group pinged, if any."""
    if isinstance(content, Notice):
        return clip(mrkdwn(f"tallybot: {content.text}"), MAX_FALLBACK)
    text = clip(mrkdwn(content.headline or content.title or content.count_id), MAX_FALLBACK)
    group = ping(content)
    return text if group is None else f"{group} {text}"


def reply_payload(reply: Reply) -> tuple[str, list[Block]]:
    """A command's reply as (notification text, blocks)."""
    if reply.message is None:
        body = reply.body if reply.text else Timed.of("Done.")
        if units(str(body)) > MAX_REPLY:
            body = Timed.of(str(body)[: MAX_REPLY - 1] + ELLIPSIS)
        return clip(mrkdwn(str(body)), MAX_FALLBACK), text_blocks(body)
    intro = reply.body if reply.text != reply.message.headline else None
    blocks = message_blocks(reply.message, intro=intro)
    return clip(mrkdwn(reply.text or reply.message.headline), MAX_FALLBACK), blocks


def file_comment(text: str) -> str:
    """A file's comment (mrkdwn to Slack, so neutralised)."""
    return clip(mrkdwn(text), MAX_FALLBACK)


def file_title(text: str) -> str:
    """A file's title: plain text to Slack, shown as typed."""
    return clean(text)[:MAX_FILE_TITLE]


def alt_text(text: str) -> str:
    """An image's description (alt text): plain text to Slack, shown as typed."""
    return clean(text)[:MAX_ALT_TEXT]
