"""Hostile text through the real discord.py and FakeDiscord: titles, labels, a source's name and
what a user types show exactly as typed in every payload, link nothing and ping no one; times
are Discord timestamps, shown in each reader's own zone.

The payloads are read with the model of Discord's markdown in ``tests/fakes/discord_fake``:
tallybot's own markup (the bold headline, the bold votes, the bar in code, its timestamps) is
taken out first, by structure, and nothing else may be live.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.discord.embeds import (
    MAX_TITLE,
    clip,
    embed_problems,
    message_embed,
    notice_content,
    reply_parts,
)
from bot.commands.request import Reply
from bot.domain.limits import MAX_LABEL
from bot.domain.limits import MAX_TITLE as MOST_TITLE
from bot.domain.message import Notice
from bot.domain.safe_text import clean
from bot.domain.times import unix
from bot.store import tallies as tally_rows
from tests.adapters.test_discord import (
    ALICE,
    BOSS,
    MANAGE_GUILD,
    World,
    answer,
    answered,
    bot_posts,
    config,
    count_table,
    opts,
    running,
    vt,
    world,
)
from tests.fakes.discord_fake import RecordedMessage
from tests.fakes.discord_fake.markdown import markup, visible
from tests.helpers import T0
from tests.hostile import HOSTILE, HOSTILE_TEXT, LONG, hostile_message, typed

__all__ = ["vt", "world"]  # the fixtures, from test_discord

EVIL = 555_555_555_555_555_555
EVIL_NAME = HOSTILE[3]  # inline markdown of every kind, no line break
LABELS = [h for h in HOSTILE if h is not LONG]
VOTES = re.compile(r"^\*\*[\d,]+\*\* votes? · ")
BAR = re.compile(r"^`[█░]+`$")
TIMESTAMP = re.compile(r"<t:(\d+):[fR]>")


def hostile_counts() -> list[dict[str, Any]]:
    many = count_table("evil", HOSTILE[0], [(f"c{i}", h) for i, h in enumerate(LABELS)])
    long = count_table(  # as long as the limits let a count be
        "long", LONG[:MOST_TITLE], [("yes", LONG[:MAX_LABEL]), ("no", ("No " + LONG)[:MAX_LABEL])]
    )
    return [many, long]


def description_markup(description: str, ours: tuple[str, ...] = ()) -> list[str]:
    """Markup in an embed's description besides its bold headline (and ``ours``)."""
    assert description.startswith("**"), description
    end = description.index("**", 2)  # escaped, the headline has no "**" of its own
    return markup(description[2:end], ours=ours) + markup(description[end + 2 :], ours=ours)


def field_markup(value: str) -> list[str]:
    """Markup in a choice's field besides the bold votes and the bar in code."""
    lines = value.split("\n")
    assert VOTES.match(lines[0]), lines[0]
    rest = [VOTES.sub("", lines[0])] + [line for line in lines[1:] if not BAR.match(line)]
    return markup("\n".join(rest))


def embed_markup(embed: dict[str, Any], ours: tuple[str, ...] = ()) -> list[str]:
    found = markup(embed.get("title", "")) + description_markup(embed["description"], ours)
    for f in embed.get("fields", []):
        found += markup(f["name"].removeprefix("▶ ").removeprefix("✅ "))
        if not f["name"].startswith("…and"):
            found += field_markup(f["value"])
    return found


def pinged_nobody(message: RecordedMessage) -> None:
    assert message.allowed_mentions == {"parse": []}
    assert (message.mention_everyone, message.mention_roles, message.mentions) == (False, [], [])


async def test_hostile_text_shows_as_typed_in_every_payload(tmp_path: Path, world: World) -> None:
    fake = world.fake
    fake.add_member(world.guild, EVIL, EVIL_NAME, permissions=MANAGE_GUILD)
    cfg = config(tmp_path, world, *hostile_counts())
    async with running(world, cfg) as bot:

        async def slash(user: int, sub: str, **values: Any) -> RecordedMessage:
            return answer(await bot.slash(user, sub, opts(**values), channel=world.results))

        await slash(ALICE, "subscribe", count="evil", mode="all")  # may manage channels
        await slash(ALICE, "subscribe", count="long", mode="all")
        accepted = await slash(EVIL, "update", count="evil", figures="c0=5 c1=3 c2=1")
        long_accepted = await slash(EVIL, "update", count="long", figures="yes=2 no=1")
        await bot.settle()
        status = await slash(BOSS, "status", count="evil")
        listed = await slash(BOSS, "list")
        history = await slash(BOSS, "history", count="evil")
        unknown = await slash(BOSS, "status", count="**x**[y](https://evil.example)@everyone")
        ix = await fake.inject_autocomplete(
            world.guild, world.results, BOSS, "count", opts(count=""), focused="count",
            subcommand="status",
        )  # fmt: skip
        await fake.wait_for(lambda: answered(ix))
        async with bot.app.db.connect() as conn:
            seen = [t.observed_at for t in await tally_rows.history(conn, "evil", limit=5)]
        posted, long_posted = bot_posts(fake, world.results)

    # The update as posted to the channel: every text as typed, nothing live.
    (embed,) = posted.embeds
    assert visible(embed["title"]) == typed(HOSTILE[0])
    names = [visible(f["name"]).removeprefix("▶ ") for f in embed["fields"]]
    assert names == [typed(label) for label in LABELS]
    assert embed_markup(embed) == []
    source = f"admin {clean(EVIL_NAME)}"
    assert embed["footer"]["text"] == f"Unofficial results · source: {source} · update #1 · ref tb1"
    assert datetime.fromisoformat(embed["timestamp"]) == seen[0]  # "as of", in the reader's zone

    # At every limit of a count: whole within the embed's, and the fake (which refuses 400)
    # took it (the renderer's own cuts are tested in test_renderer_words and embeds).
    (big,) = long_posted.embeds
    assert len(big["title"]) <= MAX_TITLE
    assert big["title"] == LONG[:MOST_TITLE]
    assert embed_markup(big) == []

    # Replies: the same, in content as in embeds.
    assert accepted.content.startswith("Accepted update #1 for evil: ")
    assert markup(accepted.content) == []
    assert embed_markup(accepted.embeds[0]) == []
    assert markup(long_accepted.content) == []
    assert embed_markup(status.embeds[0]) == []
    assert visible(status.embeds[0]["title"]) == typed(HOSTILE[0])
    assert markup(listed.content) == []  # within 2000 characters, as the limits keep it
    assert f"evil: {typed(HOSTILE[0])} [counting]" in visible(listed.content)
    assert markup(unknown.content) == []
    assert "'**x**[y](https://evil.example)@everyone'" in visible(unknown.content)

    # History: each time is a timestamp (the reader's zone), the source's name as typed.
    stamps = [int(t) for t in TIMESTAMP.findall(history.content)]
    assert stamps == [int(t.timestamp()) for t in seen]
    assert markup(history.content, ours=tuple(f"<t:{t}:f>" for t in stamps)) == []
    assert f"(source: {source})" in visible(history.content)

    # Autocomplete choices are plain text to Discord: as typed, no backslash added.
    assert ix.choices is not None
    assert [c["name"] for c in ix.choices] == [
        clip(typed(f"evil — {HOSTILE[0]}"), 100),
        clip(typed(f"long — {LONG}"), 100),
    ]
    for message in (posted, long_posted, accepted, status, listed, history, unknown):
        pinged_nobody(message)


def unseen_zwsp(text: str) -> str:
    """``text`` as ``visible`` compares it: a zero-width space after an ``@`` is taken out there
    (tallybot puts one in to defuse a mention), so one that was typed is taken out here too
    (hypothesis found ``@\u200b0``: shown as typed, then compared without its space)."""
    return text.replace("@\u200b", "@")


@given(st.lists(HOSTILE_TEXT, min_size=2, max_size=4), HOSTILE_TEXT, HOSTILE_TEXT)
def test_every_text_of_any_message_is_escaped_wherever_it_lands(
    labels: list[str], title: str, source: str
) -> None:
    """Any title, labels and source, through the formatter and the embed: nothing is live."""
    message = hostile_message(labels, title, source)
    embed = message_embed(message)
    assert embed_problems(embed) == []
    shown = embed.to_dict()
    assert embed_markup(shown, ours=(f"<t:{unix(T0)}:R>",)) == []
    assert visible(shown.get("title", "")).removesuffix("…") in unseen_zwsp(typed(message.title))
    content, _ = reply_parts(Reply(str(message.notes[0]), timed=message.notes[0]))
    assert content is not None
    assert markup(content, ours=(f"<t:{unix(T0)}:R>",)) == []
    notice = notice_content(Notice(f"Source {source} is stale: {title}"))
    assert markup(notice) == []
    assert visible(notice) == unseen_zwsp(typed(f"⚠️ Source {source} is stale: {title}"))
