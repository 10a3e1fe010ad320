"""Discord's rendering of the platform-neutral ``Message`` and ``Notice``, always within limits.

A ``Message`` becomes one embed:

    title        the count's title                                  (<= 256)
    description  **headline**, then one line each for margin, what remains, challenged, turnout
    fields       one per choice: label; votes, share, bar and what it still needs  (<= 25)
    footer       provenance and time, then the delivery key (``ref``)  (<= 2048)
    colour       by the leading (or winning) choice's position, grey before anything is counted

Discord answers 400 (code 50035) to an embed over any limit (title 256, description 4096, 25
fields, field name 256, field value 1024, footer 2048, 6000 characters in all), so everything
is shortened here ("…") instead: a long title is clipped, more than 25 choices are summarised in
the last field, and when the whole is still over 6000 the longest texts are cut to a common cap.

Every text is escaped for where it lands (``adapters.discord.text``): markdown escaped in the
title, description, fields and message content, so that a title such as ``[x](https://evil)
**bold**`` shows as typed and links nothing; left plain in the footer, which Discord does not
render. Mentions are defused in both: an embed never pings, but a count titled "@everyone"
should not even look like a ping, and the same texts are used as message content in replies and
notices, where only ``allowed_mentions`` stands between a title and a mass ping. Times are
Discord timestamps (``<t:...>``), and the footer's "as of" is the embed's own ``timestamp``:
each reader sees them in their own zone. Nothing here computes numbers: they come worded by the
formatter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from adapters.discord.lib import discord
from adapters.discord.text import escape, plain, show, trim
from bot.platform import ChoiceLine, Message, Notice, Reply, Timed, noun

MAX_TITLE = 256
MAX_DESCRIPTION = 4096
MAX_FIELDS = 25
MAX_FIELD_NAME = 256
MAX_FIELD_VALUE = 1024
MAX_FOOTER = 2048
MAX_TOTAL = 6000
MAX_CONTENT = 2000
ELLIPSIS = "…"

PALETTE = (
    discord.Colour(0x3BA55C),  # green
    discord.Colour(0xED4245),  # red
    discord.Colour(0x5865F2),  # blurple
    discord.Colour(0xFAA61A),  # orange
    discord.Colour(0xEB459E),  # fuchsia
    discord.Colour(0x1ABC9C),  # teal
    discord.Colour(0x9B59B6),  # purple
    discord.Colour(0xF1C40F),  # yellow
)
NO_LEADER = discord.Colour(0x99AAB5)
NOTICE_COLOUR = discord.Colour(0xFAA61A)

__all__ = ["escape", "plain"]  # the escaping of adapters.discord.text, used with what is here


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in "…" when cut (never in a
    backslash that escaped the character cut off)."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    return trim(text[: limit - 1].rstrip()) + ELLIPSIS


def colour_for(position: int | None) -> discord.Colour:
    if position is None:
        return NO_LEADER
    return PALETTE[position % len(PALETTE)]


def _cap_for(lengths: Sequence[int], budget: int) -> int:
    """The largest cap c such that ``sum(min(n, c))`` fits ``budget`` (at least 1)."""
    lo, hi = 1, max(lengths, default=1)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(n, mid) for n in lengths) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def fit(texts: Sequence[str], budget: int) -> list[str]:
    """Cut the longest of ``texts`` to a common cap so that together they fit ``budget``.

    Short texts are left whole; no text is cut below one character (the caller leaves room).
    """
    if sum(len(t) for t in texts) <= budget:
        return list(texts)
    cap = _cap_for([len(t) for t in texts], budget)
    return [clip(t, cap) for t in texts]


def _choice_name(c: ChoiceLine) -> str:
    mark = "✅ " if c.winner else ("▶ " if c.leading else "")
    return mark + escape(c.label)


def _choice_value(c: ChoiceLine) -> str:
    lines = [f"**{escape(c.votes_text)}** {noun(c.votes, 'vote')} · {escape(c.share_text)}"]
    if c.bar:
        lines.append(f"`{c.bar.replace('`', '')}`")
    if c.note:
        lines.append(escape(c.note))
    return "\n".join(lines)


def _summary_value(rest: Sequence[ChoiceLine]) -> str:
    return "\n".join(escape(f"{c.label}: {c.votes_text} ({c.share_text})") for c in rest)


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    value: str


def _fields(message: Message) -> list[_Field]:
    choices = message.choices
    if len(choices) <= MAX_FIELDS:
        return [_Field(_choice_name(c), _choice_value(c)) for c in choices]
    shown, rest = choices[: MAX_FIELDS - 1], choices[MAX_FIELDS - 1 :]
    fields = [_Field(_choice_name(c), _choice_value(c)) for c in shown]
    fields.append(_Field(f"…and {len(rest)} more choices", _summary_value(rest)))
    return fields


def message_embed(message: Message, *, ref: str | None = None) -> discord.Embed:
    """The embed for one message (an update, a live scoreboard, a status reply); ``ref`` (a
    delivery key) ends the footer, where the bot finds its posts again."""
    tail = f" · ref {ref}" if ref else ""
    title = clip(escape(message.title), MAX_TITLE)
    footer = clip(message.footer.show(plain, None), MAX_FOOTER - len(tail)) + tail
    headline = f"**{clip(escape(message.headline), MAX_DESCRIPTION // 2)}**"
    lines = [escape(line) for line in message.lines] + [show(n) for n in message.notes]
    description = clip("\n".join([headline, *lines]), MAX_DESCRIPTION)
    fields = [
        _Field(
            clip(f.name, MAX_FIELD_NAME) or "\u200b",
            clip(f.value, MAX_FIELD_VALUE) or "\u200b",
        )
        for f in _fields(message)
    ]
    # Everything but the title and footer shares what is left of the 6000 characters.
    budget = MAX_TOTAL - len(title) - len(footer)
    flat = [description, *(t for f in fields for t in (f.name, f.value))]
    fitted = fit(flat, budget)
    description, rest = fitted[0], fitted[1:]
    fields = [_Field(rest[2 * i], rest[2 * i + 1]) for i in range(len(fields))]

    lead = message.leader_position
    if message.winner is not None:
        lead = next((c.position for c in message.choices if c.choice_id == message.winner), lead)
    moments = message.footer.moments
    embed = discord.Embed(
        title=title,
        description=description,
        colour=colour_for(lead),
        timestamp=moments[-1].at if moments else None,
    )
    for f in fields:
        embed.add_field(name=f.name, value=f.value, inline=False)
    if footer:
        embed.set_footer(text=footer)
    return embed


def notice_content(notice: Notice, *, ref: str | None = None) -> str:
    """An admin notice as plain message content (mentions escaped, within 2000 characters);
    ``ref`` (a delivery key) ends it, in small print."""
    tail = f"\n-# ref {ref}" if ref else ""
    return clip("⚠️ " + escape(notice.text), MAX_CONTENT - len(tail)) + tail


def text_content(text: Timed) -> str | None:
    """A reply's text as message content, or None when it is too long for content."""
    escaped = show(text)
    return escaped if len(escaped) <= MAX_CONTENT else None


def text_embed(text: Timed) -> discord.Embed:
    """A reply too long for message content, as an embed's description."""
    return discord.Embed(description=clip(show(text), MAX_DESCRIPTION), colour=NO_LEADER)


def reply_parts(reply: Reply) -> tuple[str | None, discord.Embed | None]:
    """A command's reply as message content and/or an embed (escaped)."""
    if reply.message is not None and reply.ok:
        embed = message_embed(reply.message)
        if reply.text == reply.message.headline:
            return None, embed
        return clip(show(reply.body), MAX_CONTENT), embed
    content = text_content(reply.body)
    if content is None:
        return None, text_embed(reply.body)
    return content, None


def choice_name(text: str, limit: int) -> str:
    """The name of an autocomplete choice: plain text to Discord, shown as typed."""
    return clip(plain(text), limit)


def embed_problems(embed: discord.Embed) -> list[str]:
    """What in an embed is over Discord's limits (empty when Discord would accept it)."""
    problems: list[str] = []
    data = embed.to_dict()
    checks = [
        ("title", len(data.get("title", "")), MAX_TITLE),
        ("description", len(data.get("description", "")), MAX_DESCRIPTION),
        ("footer", len(data.get("footer", {}).get("text", "")), MAX_FOOTER),
        ("fields", len(data.get("fields", [])), MAX_FIELDS),
        ("total", len(embed), MAX_TOTAL),
    ]
    for i, field in enumerate(data.get("fields", [])):
        checks.append((f"fields[{i}].name", len(field["name"]), MAX_FIELD_NAME))
        checks.append((f"fields[{i}].value", len(field["value"]), MAX_FIELD_VALUE))
        if not field["name"] or not field["value"]:
            problems.append(f"fields[{i}] is empty")
    problems.extend(f"{what}: {n} > {limit}" for what, n, limit in checks if n > limit)
    return problems
