"""Rendering on Telegram: the Bessemer messages and hostile text through the real aiogram Bot
to the fake, which parses the HTML and detects mentions, URLs and commands as Telegram does."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.telegram.render import (
    CAPTION_LIMIT,
    TEXT_LIMIT,
    WORD_JOINER,
    caption,
    neutralise,
    render,
    render_reply,
)
from bot.commands.request import Reply
from bot.domain.message import Attachment, Moment, Notice, Timed
from tests.adapters.telegram.conftest import live_entities, shown
from tests.fakes.telegram_fake import FakeTelegram, FloodLimits
from tests.fakes.telegram_fake.markup import detect, parse
from tests.fakes.telegram_fake.testing import png
from tests.helpers import T0, bessemer
from tests.hostile import HOSTILE, HOSTILE_TEXT, LONG, hostile_message, typed
from tests.test_format import bessemer_timeline, replay_messages

if TYPE_CHECKING:
    from aiogram import Bot

UNLIMITED = FloodLimits(overall_per_s=None, chat_per_s=None, group_per_min=None)
LIVE = {"mention", "url", "email", "hashtag", "cashtag", "bot_command", "text_link", "text_mention"}


@pytest.fixture
async def fake() -> object:
    async with FakeTelegram(limits=UNLIMITED) as f:
        yield f


def telegram_sees(html: str) -> tuple[str, list[str]]:
    """The fake's reading of ``html``: the plain text and the live entities in it."""
    plain, entities = parse(html, "HTML")
    return plain, [e["type"] for e in detect(plain, entities) if e["type"] in LIVE]


async def test_the_bessemer_messages_as_members_see_them(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.send import Outgoing, TelegramSender

    group = fake.add_group("Union hall")
    sender = TelegramSender(bot)
    messages = replay_messages(bessemer(), bessemer_timeline())
    for m in messages:
        await sender.send(group.id, Outgoing(render(m)))
    seen = fake.visible(group)
    assert len(seen) == len(messages)
    for m, got in zip(messages, seen, strict=True):
        text = shown(got)
        assert text.startswith(f"{m.title}\n{m.headline}\n")
        for c in m.choices:
            assert f"{c.label} — {c.votes_text} votes · {c.share_text}" in text
        assert text.endswith(str(m.footer))
        assert "8 Apr 2021 18:00 UTC" in text
        assert live_entities(got) == []
        kinds = [(e["type"], e["offset"]) for e in got.entities]
        assert ("bold", 0) in kinds
        assert kinds[-1][0] == "italic"
        assert all(r.args["link_preview_options"] == {"is_disabled": True}
                   for r in fake.calls_to("sendMessage"))  # fmt: skip
    final = messages[-1]
    assert final.final
    assert "✔ " in shown(seen[-1])


def test_times_in_the_configured_zone() -> None:
    message = replay_messages(bessemer(), bessemer_timeline())[1]
    chicago = render(message, ZoneInfo("America/Chicago")).plain.replace(WORD_JOINER, "")
    assert "8 Apr 2021 13:00 CDT" in chicago
    assert "UTC" not in chicago


@pytest.mark.parametrize("text", [h for h in HOSTILE if h is not LONG])
async def test_hostile_text_shows_as_typed(fake: FakeTelegram, bot: Bot, text: str) -> None:
    from adapters.telegram.send import Outgoing, TelegramSender

    group = fake.add_group("Union hall")
    message = hostile_message([text, f"B {text}"], text, text)
    sender = TelegramSender(bot)
    await sender.send(group.id, Outgoing(render(message)))
    await sender.send(group.id, Outgoing(render(Notice(text))))
    await sender.send(group.id, Outgoing(caption(message), Attachment("c.png", png(4, 3), "x")))
    board, notice, photo = fake.visible(group)
    for got in (board, notice, photo):
        assert live_entities(got) == [], text
    typed_text = typed(text).replace(WORD_JOINER, "")  # members cannot see a typed one either
    assert typed_text in shown(board)
    assert f"B {typed_text}" in shown(board)
    assert shown(notice) == f"⚠️ tallybot · {typed_text}"
    assert [e["type"] for e in notice.entities] == ["bold"]


async def test_over_the_limits_is_cut_with_care(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.send import Outgoing, TelegramSender

    dm = fake.private_chat(fake.add_user("Alice"))
    message = hostile_message([LONG, "x"], "& " * 3000 + "@everyone_here", "s")
    sender = TelegramSender(bot)
    await sender.send(dm.id, Outgoing(render(message)))
    await sender.send(dm.id, Outgoing(caption(message), Attachment("c.png", png(4, 3), "x")))
    text, photo = fake.visible(dm)
    assert text.text is not None
    assert len(text.text) <= TEXT_LIMIT
    assert photo.caption is not None
    assert len(photo.caption) <= CAPTION_LIMIT
    assert text.text.endswith("…")
    assert photo.caption.endswith("…")
    assert shown(text).startswith("& & &")
    assert live_entities(text) == []
    assert live_entities(photo) == []


@pytest.mark.parametrize(
    ("typed_text", "entity"),
    [
        ("@everyone_here", "mention"),
        ("mail me@evil.com", "email"),
        ("go to evil.com/x", "url"),
        ("https://10.0.0.1:8080/x", "url"),
        ("/count final bessemer-2021", "bot_command"),
        ("#strike", "hashtag"),
    ],
)
def test_what_telegram_would_find_is_neutralised(typed_text: str, entity: str) -> None:
    assert entity in telegram_sees(typed_text)[1]  # the fake finds it in plain text
    plain, live = telegram_sees(render_reply(Reply(typed_text)).html)
    assert live == []
    assert plain.replace(WORD_JOINER, "") == typed_text


def test_neutralise_leaves_figures_alone() -> None:
    assert neutralise("70.4% of 3,215 · update #12 · 1:30") == (
        "70.4% of 3,215 · update #\u206012 · 1:30"
    )


@settings(max_examples=300, deadline=None)
@given(title=HOSTILE_TEXT, label=HOSTILE_TEXT, source=HOSTILE_TEXT, cut=st.integers(20, 400))
def test_any_text_shows_as_typed_and_links_nothing(
    title: str, label: str, source: str, cut: int
) -> None:
    message = hostile_message([label, "No"], title, source)
    html = render(message).html
    plain, live = telegram_sees(html)
    assert live == []
    label_shown = re.sub("[\ud800-\udfff]", "\ufffd", typed(label)).replace(WORD_JOINER, "")
    assert label_shown in plain.replace(WORD_JOINER, "") or not label_shown.strip()
    reply = render_reply(Reply(title + label), limit=cut)
    plain, live = telegram_sees(reply.html)
    assert live == []
    assert len(plain) <= cut


def test_a_reply_with_times_and_a_message() -> None:
    body = Timed.of("History:", Moment(T0, lead=" at "))
    assert render_reply(Reply("x", timed=body)).plain == "History: at 8 Apr 2021 18:00 UTC"
    message = replay_messages(bessemer(), bessemer_timeline())[1]
    shown_reply = render_reply(Reply("Accepted update #2", message=replace(message))).plain
    assert shown_reply.replace(WORD_JOINER, "").startswith("Accepted update #2\n\n" + message.title)


async def test_a_lone_surrogate_goes_out_as_a_replacement(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.send import Outgoing, TelegramSender

    dm = fake.private_chat(fake.add_user("Alice"))
    await TelegramSender(bot).send(
        dm.id, Outgoing(render(hostile_message(["a\ud800b", "No"], "t", "s")))
    )
    assert "a\ufffdb" in shown(fake.visible(dm)[0])
