"""Hostile text through the real slack_sdk / slack_bolt and FakeSlack: titles, labels, a user's
name and what a user types show exactly as typed in every payload, with no mention, link,
formatting or emoji; times are Slack dates, shown in each reader's own zone.

The payloads are read with the model of Slack's rules in ``tests/fakes/slack_fake/markup.py``.
Only tallybot's own dates (of the tallies this test made) may be markup.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.slack.blocks import (
    MAX_HEADER,
    blocks_for,
    fallback_text,
    message_blocks,
    reply_payload,
)
from bot.commands.request import Reply
from bot.commands.throttle import PER_USER
from bot.domain.limits import MAX_LABEL, MAX_TITLE
from bot.domain.message import Notice
from bot.domain.safe_text import clean
from bot.domain.times import unix
from bot.settings.loader import Config, parse
from bot.store import tallies as tally_rows
from tests.adapters.test_slack import VirtualTime, bot_posts, fake, running, vt
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.markup import markup, text_objects, visible
from tests.helpers import T0
from tests.hostile import HOSTILE, HOSTILE_TEXT, LONG, hostile_message, typed

__all__ = ["fake", "vt"]  # the fixtures, from test_slack

LABELS = [h for h in HOSTILE if h is not LONG]
NAME = HOSTILE[3]  # inline markdown of every kind, no line break
DATE = re.compile(r"<!date\^(\d+)\^[^|>]+\|[^>]+>")


def hostile_config(tmp_path: Path, fake: FakeSlack, admin: str) -> Config:
    def count(count_id: str, title: str, labels: list[str]) -> dict[str, Any]:
        return {
            "id": count_id,
            "title": title,
            "rule": "majority",
            "received": 3215,
            "choices": [{"id": f"c{i}", "label": label} for i, label in enumerate(labels)],
            "source": {"kind": "manual"},
        }

    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "slack": {"mode": "socket", "api_base": fake.api_url, "admin_users": [admin]},
            "counts": [
                count("evil", HOSTILE[0], LABELS),
                count("long", LONG[:MAX_TITLE], [LONG[:MAX_LABEL], "No"]),
            ],
        },
        tmp_path / "tallybot.toml",
    )


def problems(blocks: list[dict[str, Any]] | None, text: str, stamps: set[int]) -> list[str]:
    """Everything in a payload that Slack would read as markup, but for tallybot's own dates
    (mrkdwn objects holding one date of a tally, at one of ``stamps``)."""
    found = markup(text)  # the notification text: mrkdwn to Slack
    for obj in text_objects(blocks):
        if obj["type"] == "mrkdwn":
            assert obj.get("verbatim") is True
            date = DATE.fullmatch(obj["text"])
            assert date is not None, obj["text"]  # tallybot's own dates, nothing else
            assert int(date.group(1)) in stamps
            continue
        found += markup(obj)
    return found


async def test_hostile_text_shows_as_typed_in_every_payload(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel = fake.add_channel("news")
    admin = fake.add_user(NAME)
    async with running(fake, hostile_config(tmp_path, fake, admin), vt) as bot:

        async def slash(text: str) -> Any:
            return await bot.slash(text, user=admin, channel=channel)

        await slash("subscribe evil all")
        await slash("subscribe long all")
        replies = [
            await slash("update evil c0=5 c1=3 c2=1"),
            await slash("update long c0=2 c1=1"),
        ]
        await bot.settle()
        status = await slash("status evil")
        listed = await slash("list")
        history = await slash("history evil")
        unknown = await slash("status **x**[y](https://evil.example)<!channel>:joy:")
        vt.clock.advance(PER_USER.seconds)  # the admin may send commands, with public replies
        await fake.send_event(
            {"type": "app_mention", "user": admin, "channel": channel,
             "text": f"<@{fake.bot_user_id}> status evil"},
        )  # fmt: skip
        await fake.wait_for(lambda: len(bot_posts(fake, channel)) == 3)
        async with bot.app.db.connect() as conn:
            seen = [t.observed_at for t in await tally_rows.history(conn, "evil", limit=5)]
            seen_long = [t.observed_at for t in await tally_rows.history(conn, "long", limit=5)]
    posted, long_posted, mentioned = bot_posts(fake, channel)
    stamps = {int(t.timestamp()) for t in seen + seen_long}

    # The update as posted: the title in the header, each label as typed, nothing is markup.
    assert posted.blocks is not None
    assert visible(posted.blocks[0]["text"]) == typed(HOSTILE[0])
    choices = [visible(b["text"]) for b in posted.blocks[2 : 2 + len(LABELS)]]
    assert [c.split(" — ")[0] for c in choices] == [typed(label) for label in LABELS]
    footer = posted.blocks[-1]["elements"]
    assert visible(footer[0]) == f"Unofficial results · source: admin {clean(NAME)} · as of"
    assert footer[1]["text"] == (
        f"<!date^{int(seen[0].timestamp())}^{{date_short_pretty}} at {{time}}"
        f"|{seen[0]:%-d %b %Y %H:%M} UTC>"
    )  # each reader's own zone; UTC where a client cannot
    assert visible(footer[2]) == "· update #1"
    for message in (posted, long_posted, mentioned):
        assert problems(message.blocks, message.text, stamps) == []

    # At every limit of a count: within Slack's, and the fake (which refuses invalid blocks)
    # took it.
    assert long_posted.blocks is not None
    header = long_posted.blocks[0]["text"]["text"]
    assert len(header) <= MAX_HEADER
    assert header == LONG[:MAX_TITLE]

    # Replies, through response_url: blocks of plain text, a neutral notification text.
    for reply in (*replies, status, listed, history, unknown):
        assert problems(reply.body.get("blocks"), reply.body["text"], stamps) == []
    assert "evil: " + typed(HOSTILE[0]) + " [counting]" in visible(listed.body["blocks"][0]["text"])
    assert "'**x**[y](https://evil.example)<!channel>:joy:'" in visible(unknown.body["text"])

    # History: one line per update, its time a Slack date.
    # (a line past a context block's limit goes on in a section: the hostile labels are long)
    lines = [b for b in history.body["blocks"][1:] if b["type"] == "context"]
    assert len(lines) == len(seen)
    dates = [DATE.fullmatch(b["elements"][1]["text"]) for b in lines]
    assert [int(d.group(1)) for d in dates if d] == [int(t.timestamp()) for t in seen]
    entry = "\n".join(
        visible(b["text"]) for b in history.body["blocks"][2:] if b["type"] == "section"
    )
    assert entry.endswith(f"(source: admin {clean(NAME)})")


@given(st.lists(HOSTILE_TEXT, min_size=2, max_size=4), HOSTILE_TEXT, HOSTILE_TEXT)
def test_every_text_of_any_message_is_plain_text_wherever_it_lands(
    labels: list[str], title: str, source: str
) -> None:
    """Any title, labels and source, through the formatter and Block Kit: nothing is markup."""
    message = hostile_message(labels, title, source)
    blocks = [dict(b) for b in message_blocks(message)]
    assert problems(blocks, fallback_text(message), {unix(T0)}) == []
    if typed(message.title).strip():
        assert blocks[0]["type"] == "header"
        assert visible(blocks[0]["text"]).removesuffix("…") in typed(message.title)
    text, replied = reply_payload(Reply(str(message.notes[0]), timed=message.notes[0]))
    assert problems([dict(b) for b in replied], text, {unix(T0)}) == []
    notice = Notice(f"Source {source} is stale: {title}")
    assert problems([dict(b) for b in blocks_for(notice)], fallback_text(notice), set()) == []
