"""The plain-text rendering of a ``Message`` (console, logs, golden files).

Plain text has no markup to escape: every text goes through ``bot.domain.safe_text.clean`` (no
control characters, so no terminal escape sequences) and times are shown in ``zone``.
"""

from __future__ import annotations

from datetime import UTC

from bot.domain.message import Message, Moment, Timed, fixed
from bot.domain.safe_text import clean
from bot.domain.times import Zone, clock_time


def show(text: Timed, zone: Zone = UTC) -> str:
    """Timed text as plain text, its times in ``zone``."""

    def time(moment: Moment) -> str:
        return clock_time(moment.at, zone)

    return text.show(clean, fixed(time))


def render(message: Message, zone: Zone = UTC) -> str:
    labels = [clean(c.label) for c in message.choices]
    width = max((len(label) for label in labels), default=0)  # a rehearsal has no choices
    votes_width = max((len(c.votes_text) for c in message.choices), default=0)
    out = [clean(message.title), clean(message.headline), ""]
    for c, label in zip(message.choices, labels, strict=True):
        mark = "*" if c.winner else " "
        note = f"  {clean(c.note)}" if c.note else ""
        out.append(
            f"{mark} {label:<{width}}  {c.votes_text:>{votes_width}}  {c.share_text:>6}  "
            f"{c.bar}{note}"
        )
    out.append("")
    out.extend(clean(line) for line in message.lines)
    out.extend(show(note, zone) for note in message.notes)
    out.append(show(message.footer, zone))
    return "\n".join(out)
