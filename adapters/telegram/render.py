"""Telegram's rendering of ``Message``, ``Notice`` and command ``Reply``: HTML, shown as typed.

Messages go out with ``parse_mode`` HTML and link previews off. The only markup is tallybot's
own (the title in bold, the footer in italics); every text from the formatter, a source or a
user goes through ``bot.domain.safe_text.clean`` and then ``html.escape``-style escaping of ``& <
>``, so ``<a href=...>`` or ``<b>`` typed into a title shows as those characters.

Escaping is not enough on Telegram: it finds mentions, URLs, e-mail addresses, hashtags,
cashtags and bot commands in *any* text by itself (tdlib's ``find_entities``), so a label
``@everyone_here`` or ``evil.com/x`` would be a live mention or link, and ``/count final x``
a command one tap sends. ``neutralise`` puts a WORD JOINER (U+2060, invisible, no width, no
line break) where it stops each of them, following tdlib's own rules: after ``@``, ``#``,
``$`` and ``/`` before a word character (a mention needs ASCII word characters right after
``@``; U+2060 is no hashtag letter, unlike U+200C), after the colon of ``://``, and after a
dot inside a domain-like word (tdlib's domain scan stops at anything in U+2000-U+206F but the
joiners and dashes). What shows is exactly what was typed; only a copy-paste carries the
invisible joiners. Digits alone (bank-card-like numbers) are left as they are.

Limits: 4,096 characters of text per message and 1,024 per caption, counted after the HTML is
parsed. The text is built as runs of plain text with a style (``Run``); ``finish`` neutralises
the whole (so nothing is found across runs either; a lone surrogate, which no UTF-8 can
carry, becomes U+FFFD), cuts it to the limit on the *plain* text
with a final "…" (UTF-16 units, never fewer than Telegram's count), and only then escapes and
wraps each run in its tags: a cut can never split a tag or an ``&amp;``.

Times: Telegram has no reader-local dates, so every time is shown in ``zone`` (UTC unless the
configuration names one), with the zone's abbreviation (``bot.domain.times.clock_time``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC
from typing import Literal

from bot.platform import (
    ChoiceLine,
    Message,
    Notice,
    Outgoing,
    Reply,
    Timed,
    Zone,
    clean,
    fitting,
    noun,
    show,
    units,
)

TEXT_LIMIT = 4096
CAPTION_LIMIT = 1024
PARSE_MODE = "HTML"
WORD_JOINER = "\u2060"
ELLIPSIS = "…"

Style = Literal["", "b", "i"]

# Where a word joiner goes (a zero-width match: the joiner is inserted there).
_BREAKS = re.compile(
    r"(?<=[@#$/])(?=\w)"  # mentions, e-mails, hashtags, cashtags, bot commands
    r"|(?<=:)(?=//)"  # scheme://
    r"|(?<=\w\.)(?=[^\W\d])"  # domain.tld (not 70.4%)
)
_SURROGATES = re.compile("[\ud800-\udfff]")
"""A lone surrogate (a source's JSON may hold one): no UTF-8 can carry it to Telegram."""
_DOTTED_NUMBERS = re.compile(r"\d+(?:\.\d+){2,}")
"""10.0.0.1, 1.2.3: a host by number (every dot gets a joiner)."""


@dataclass(frozen=True, slots=True)
class Run:
    """Plain text (already cleaned) and its style: "" plain, "b" bold, "i" italic."""

    text: str
    style: Style = ""


@dataclass(frozen=True, slots=True)
class Rendered:
    """What goes out: ``html`` for ``parse_mode`` HTML, and ``plain``, what Telegram shows."""

    html: str
    plain: str
    quiet: str = ""
    """The HTML of a repair's silent copy (``adapters.telegram.once``): the same text with a
    WORD JOINER after its first character (cut shorter at the end if the limit needs it), so
    that it shows the same but a probe tells it from a notified copy ("message is not
    modified" for the notified copy only). Empty: the same as ``html``."""

    parse_mode = PARSE_MODE

    @property
    def silent_html(self) -> str:
        return self.quiet or self.html


def breaks(text: str) -> list[int]:
    """The indexes of ``text`` where a word joiner goes (see the module docstring)."""
    points = {m.start() for m in _BREAKS.finditer(text)}
    for m in _DOTTED_NUMBERS.finditer(text):
        points.update(m.start() + i + 1 for i, ch in enumerate(m.group()) if ch == ".")
    return sorted(points)


def neutralise(text: str) -> str:
    """``text`` with a word joiner wherever Telegram would find a mention, link or command.

    >>> neutralise("@everyone see evil.com or https://x.example /count").replace(WORD_JOINER, "|")
    '@|everyone see evil.|com or https:|//x.|example /|count'
    """
    out, last = [], 0
    for point in breaks(text):
        out += [text[last:point], WORD_JOINER]
        last = point
    return "".join([*out, text[last:]])


def escape(text: str) -> str:
    """``& < >`` as HTML entities (Telegram's HTML needs no more outside attributes)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _neutralised_runs(runs: list[Run]) -> list[Run]:
    """Each run with its joiners, found on the text of all runs together."""
    whole = "".join(r.text for r in runs)
    points = breaks(whole)
    out: list[Run] = []
    start = 0
    for run in runs:
        end = start + len(run.text)
        mine = [p - start for p in points if start < p <= end or (p == start == 0)]
        text, last = [], 0
        for p in mine:
            text += [run.text[last:p], WORD_JOINER]
            last = p
        out.append(Run("".join([*text, run.text[last:]]), run.style))
        start = end
    return out


def _clip(runs: list[Run], limit: int) -> list[Run]:
    """The runs cut to ``limit`` UTF-16 units of plain text, the last one ending in "…"."""
    if sum(units(r.text) for r in runs) <= limit:
        return runs
    room = limit - 1
    out: list[Run] = []
    for run in runs:
        size = units(run.text)
        if size <= room:
            out.append(run)
            room -= size
            continue
        cut = fitting(run.text, room)
        out.append(Run(run.text[:cut].rstrip() + ELLIPSIS, run.style))
        break
    return out


def finish(runs: Iterable[Run], limit: int = TEXT_LIMIT) -> Rendered:
    """Runs as Telegram HTML: neutralised, cut to ``limit``, escaped, styled."""
    whole = [Run(_SURROGATES.sub("\ufffd", r.text), r.style) for r in runs if r.text]
    neutralised = _neutralised_runs(whole)
    kept = _clip(neutralised, limit)
    quiet = _clip(_marked(neutralised), limit)
    return Rendered(_html(kept), "".join(r.text for r in kept), _html(quiet))


def _html(runs: list[Run]) -> str:
    return "".join(
        f"<{r.style}>{escape(r.text)}</{r.style}>" if r.style and r.text.strip() else escape(r.text)
        for r in runs
    )


def _marked(runs: list[Run]) -> list[Run]:
    """The runs with a WORD JOINER after the first character (``Rendered.quiet``): inside the
    text, where Telegram keeps it (it strips what is empty at either end)."""
    out = list(runs)
    for i, run in enumerate(out):
        if run.text:
            out[i] = Run(run.text[:1] + WORD_JOINER + run.text[1:], run.style)
            break
    return out


# --------------------------------------------------------------------------- content


def choice_line(c: ChoiceLine) -> str:
    """``✔ No union — 1,798 votes · 70.8%`` and, on the next line, the bar and the note."""
    mark = "✔ " if c.winner else ""
    second = "  ".join(part for part in (c.bar, clean(c.note)) if part)
    text = f"{mark}{clean(c.label)} — {c.votes_text} {noun(c.votes, 'vote')} · {c.share_text}"
    return text + (f"\n{second}" if second else "")


TITLE_AT_LEAST = 24
"""A title cut to make room for the figures keeps at least this many characters."""


def message_runs(
    message: Message, zone: Zone = UTC, *, intro: Timed | None = None, limit: int = TEXT_LIMIT
) -> list[Run]:
    """A ``Message``: the title in bold, the headline, the choices, the detail lines, the notes
    and the footer in italics, times in ``zone``. Over ``limit``, the title is cut first (to
    :data:`TITLE_AT_LEAST`), so that the figures are there (a photo's caption is 1,024)."""
    runs: list[Run] = []
    if intro is not None:
        runs.append(Run(show(intro, zone) + "\n\n"))
    title = clean(message.title)
    if title.strip():
        runs += [Run(title, "b"), Run("\n")]
    runs += _body_runs(message, zone)
    over = sum(units(r.text) for r in runs) - limit
    if title.strip() and over > 0:
        at = 1 if intro is not None else 0
        room = max(TITLE_AT_LEAST, units(title) - over - 1)
        runs[at] = _clip([runs[at]], room)[0] if units(title) > room else runs[at]
    return runs


def _body_runs(message: Message, zone: Zone) -> list[Run]:
    runs: list[Run] = []
    body = [clean(message.headline), ""]
    body += [choice_line(c) for c in message.choices]
    details = [clean(line) for line in message.lines if clean(line).strip()]
    details += [show(note, zone) for note in message.notes]
    if details:
        body += ["", *details]
    runs.append(Run("\n".join(body) + "\n\n"))
    runs.append(Run(show(message.footer, zone), "i"))
    return runs


def notice_runs(notice: Notice) -> list[Run]:
    return [Run("⚠️ tallybot", "b"), Run(" · " + clean(notice.text))]


def runs_for(content: Outgoing, zone: Zone = UTC, limit: int = TEXT_LIMIT) -> list[Run]:
    if isinstance(content, Notice):
        return notice_runs(content)
    return message_runs(content, zone, limit=limit)


def render(content: Outgoing, zone: Zone = UTC) -> Rendered:
    """A message's text (4,096 at most)."""
    return finish(runs_for(content, zone), TEXT_LIMIT)


def caption(content: Outgoing, zone: Zone = UTC) -> Rendered:
    """A photo's caption (1,024 at most): the chart of a final goes out with its message."""
    return finish(runs_for(content, zone, CAPTION_LIMIT), CAPTION_LIMIT)


def reply_runs(reply: Reply, zone: Zone = UTC, limit: int = TEXT_LIMIT) -> list[Run]:
    """A command's reply: its text (times in ``zone``), or the message it shows."""
    if reply.message is None:
        body = reply.body if reply.text else Timed.of("Done.")
        return [Run(show(body, zone))]
    intro = reply.body if reply.text != reply.message.headline else None
    return message_runs(reply.message, zone, intro=intro, limit=limit)


def render_reply(reply: Reply, zone: Zone = UTC, *, limit: int = TEXT_LIMIT) -> Rendered:
    return finish(reply_runs(reply, zone, limit), limit)
