"""The plain-text rendering of a ``Message`` (console, logs, golden files)."""

from __future__ import annotations

from bot.message import Message


def render(message: Message) -> str:
    width = max(len(c.label) for c in message.choices)
    votes_width = max(len(c.votes_text) for c in message.choices)
    out = [f"{message.title}", message.headline, ""]
    for c in message.choices:
        mark = "*" if c.winner else " "
        note = f"  {c.note}" if c.note else ""
        out.append(
            f"{mark} {c.label:<{width}}  {c.votes_text:>{votes_width}}  {c.share_text:>6}  "
            f"{c.bar}{note}"
        )
    out.append("")
    out.extend(message.lines)
    out.append(message.footer)
    return "\n".join(out)
