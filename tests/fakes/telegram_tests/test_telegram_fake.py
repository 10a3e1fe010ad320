"""FakeTelegram driven by the real aiogram client: methods, payload rules and errors."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import CAPTION_LIMIT, TEXT_LIMIT, Chat, FakeTelegram, User
from tests.fakes.telegram_fake.testing import aiogram_bot, png

if TYPE_CHECKING:
    from aiogram import Bot
    from aiogram.exceptions import TelegramAPIError
    from aiogram.types import InlineKeyboardMarkup


@dataclass
class Scene:
    alice: User
    bob: User
    group: Chat
    """Supergroup "Union hall": the bot a plain member, alice an admin, bob a member."""
    dm: Chat
    """Alice's private chat with the bot."""


@pytest.fixture
def scene(fake: FakeTelegram) -> Scene:
    alice, bob = fake.add_user("Alice", "alice_organizer"), fake.add_user("Bob")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice, "administrator", {"can_pin_messages"})
    fake.add_member(group, bob)
    return Scene(alice, bob, group, fake.private_chat(alice))


def button(data: str) -> InlineKeyboardMarkup:
    from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

    return InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text="Refresh", callback_data=data)]]
    )


async def raw(fake: FakeTelegram, path: str, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{fake.base_url}{path}", **kwargs) as resp,
    ):
        return resp.status, await resp.json()


# ---------------------------------------------------------------- token and transports


async def test_get_me_and_the_token_in_the_path(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramUnauthorizedError

    me = await bot.get_me()
    assert (me.id, me.username, me.is_bot) == (fake.bot.id, "tallybot", True)
    assert me.can_read_all_group_messages is False  # privacy mode

    async with aiogram_bot(fake, token=f"{fake.bot.id}:wrong-secret") as wrong:
        with pytest.raises(TelegramUnauthorizedError, match="Unauthorized"):
            await wrong.get_me()
    assert await raw(fake, "/botnot-a-token/getMe") == (
        404,
        {"ok": False, "error_code": 404, "description": "Not Found"},
    )
    status, body = await raw(fake, f"/bot{fake.token}/noSuchMethod")
    assert (status, body["description"]) == (404, "Not Found: method not found")
    status, body = await raw(fake, f"/bot{fake.token}/GETME")  # method names ignore case
    assert (status, body["result"]["id"]) == (200, fake.bot.id)
    assert [r.method for r in fake.requests] == ["getMe", "getMe"]  # refused tokens: no record


async def test_json_form_and_query_requests_mean_the_same(
    fake: FakeTelegram, scene: Scene, clock: FakeClock
) -> None:
    path = f"/bot{fake.token}/sendMessage"
    markup = {"inline_keyboard": [[{"text": "R", "callback_data": "r"}]]}
    await raw(fake, path, json={"chat_id": scene.dm.id, "text": "a", "reply_markup": markup})
    form = {"chat_id": str(scene.dm.id), "text": "b", "reply_markup": str(markup)}
    form["reply_markup"] = '{"inline_keyboard": [[{"text": "R", "callback_data": "r"}]]}'
    await raw(fake, path, data=form)
    await raw(fake, path, params={"chat_id": str(scene.dm.id), "text": "c"})
    clock.advance(1)  # a chat takes 3 at once, then 1 per second
    upload = aiohttp.FormData()
    upload.add_field("chat_id", str(scene.dm.id))
    upload.add_field("photo", png(10, 10), filename="c.png", content_type="image/png")
    status, body = await raw(fake, f"/bot{fake.token}/sendPhoto", data=upload)

    assert status == 200
    assert body["result"]["photo"][-1]["width"] == 10
    a, b, c, photo = fake.requests
    assert [r.content_type for r in fake.requests] == [
        "application/json",
        "application/x-www-form-urlencoded",
        "application/octet-stream",
        "multipart/form-data",
    ]
    assert a.args == {"chat_id": scene.dm.id, "text": "a", "reply_markup": markup}
    assert b.args == {"chat_id": scene.dm.id, "text": "b", "reply_markup": markup}
    assert (c.args, c.text) == ({"chat_id": scene.dm.id, "text": "c"}, "c")
    assert photo.photo_sha256 == hashlib.sha256(png(10, 10)).hexdigest()
    assert [m.text for m in fake.visible(scene.dm)] == ["a", "b", "c", None]


# ---------------------------------------------------------------- messages


async def test_send_edit_pin_delete_are_recorded(
    fake: FakeTelegram, bot: Bot, scene: Scene
) -> None:
    from aiogram.types import Message

    group = scene.group
    fake.set_bot_status(group, "administrator", {"can_pin_messages", "can_delete_messages"})
    sent = await bot.send_message(
        group.id, "<b>Yes</b> 10 · No 7", parse_mode="HTML", reply_markup=button("refresh")
    )
    edited = await bot.edit_message_text(
        "<b>Yes</b> 11 · No 7", chat_id=group.id, message_id=sent.message_id, parse_mode="HTML"
    )
    assert isinstance(edited, Message)  # (True only for inline messages)
    assert await bot.pin_chat_message(group.id, sent.message_id, disable_notification=True)
    pinned = (await bot.get_chat(group.id)).pinned_message
    assert await bot.unpin_chat_message(group.id, message_id=sent.message_id)
    unpinned = (await bot.get_chat(group.id)).pinned_message
    assert await bot.delete_message(group.id, sent.message_id)

    assert sent.text == "Yes 10 · No 7"
    assert sent.from_user
    assert sent.from_user.id == fake.bot.id
    assert [(e.type, e.offset, e.length) for e in sent.entities or []] == [("bold", 0, 3)]
    assert sent.reply_markup is not None
    assert sent.reply_markup.inline_keyboard[0][0].callback_data == "refresh"
    assert (edited.text, edited.edit_date is not None) == ("Yes 11 · No 7", True)
    assert edited.reply_markup is None  # an edit without reply_markup removes the keyboard
    assert pinned is not None
    assert pinned.message_id == sent.message_id
    assert unpinned is None
    (message,) = fake.messages(group)
    assert (message.deleted, message.text, message.parse_mode) == (True, "Yes 11 · No 7", "HTML")
    assert [r.text for r in message.revisions] == ["Yes 10 · No 7"]
    first = fake.calls_to("sendMessage")[0]
    assert (first.chat_id, first.text, first.parse_mode) == (
        group.id,
        "<b>Yes</b> 10 · No 7",
        "HTML",
    )
    assert first.reply_markup == {
        "inline_keyboard": [[{"text": "Refresh", "callback_data": "refresh"}]]
    }
    assert fake.visible(group) == []


async def test_photo_upload_caption_and_resend_by_file_id(
    fake: FakeTelegram, bot: Bot, scene: Scene
) -> None:
    from aiogram.exceptions import TelegramBadRequest
    from aiogram.types import BufferedInputFile, Message

    chart = png(1600, 900)
    sent = await bot.send_photo(
        scene.group.id,
        BufferedInputFile(chart, "bessemer.png"),
        caption="<i>Bessemer</i> 2021",
        parse_mode="HTML",
    )
    again = await bot.send_photo(scene.dm.id, sent.photo[-1].file_id if sent.photo else "")
    recaptioned = await bot.edit_message_caption(
        chat_id=scene.group.id, message_id=sent.message_id, caption="Final: No wins"
    )
    assert isinstance(recaptioned, Message)

    assert sent.photo
    assert (sent.photo[-1].width, sent.photo[-1].height) == (1600, 900)
    assert [p.width for p in sent.photo] == [90, 320, 800, 1280, 1600]
    assert sent.caption == "Bessemer 2021"
    assert again.photo == sent.photo
    assert recaptioned.caption == "Final: No wins"
    assert not recaptioned.caption_entities
    upload, resend, _ = fake.requests
    assert upload.photo_sha256 == hashlib.sha256(chart).hexdigest()
    assert upload.args["photo"]["filename"] == "bessemer.png"
    assert resend.args["photo"] == sent.photo[-1].file_id
    assert resend.photo_sha256 is None
    (stored,) = fake.messages(scene.group)
    assert stored.photo_sha256 == hashlib.sha256(chart).hexdigest()
    with pytest.raises(TelegramBadRequest, match="there is no text in the message to edit"):
        await bot.edit_message_text("x", chat_id=scene.group.id, message_id=sent.message_id)


async def test_limits_count_characters_after_entity_parsing(
    fake: FakeTelegram, bot: Bot, scene: Scene
) -> None:
    from aiogram.exceptions import TelegramBadRequest
    from aiogram.types import BufferedInputFile

    longest = await bot.send_message(scene.dm.id, "é" * TEXT_LIMIT)
    tagged = await bot.send_message(scene.dm.id, f"<b>{'x' * TEXT_LIMIT}</b>", parse_mode="HTML")
    caption = await bot.send_photo(
        scene.dm.id, BufferedInputFile(png(4, 4), "c.png"), caption="😀" * CAPTION_LIMIT
    )
    assert longest.text == "é" * TEXT_LIMIT
    assert tagged.text == "x" * TEXT_LIMIT
    assert caption.caption == "😀" * CAPTION_LIMIT
    with pytest.raises(TelegramBadRequest, match=r"Bad Request: message is too long$"):
        await bot.send_message(scene.dm.id, "x" * (TEXT_LIMIT + 1))
    with pytest.raises(TelegramBadRequest, match="Bad Request: message caption is too long"):
        await bot.send_photo(
            scene.dm.id, BufferedInputFile(png(4, 4), "c.png"), caption="x" * (CAPTION_LIMIT + 1)
        )
    assert len(fake.visible(scene.dm)) == 3


async def test_telegram_finds_mentions_links_and_commands_in_plain_text(
    fake: FakeTelegram, bot: Bot, scene: Scene
) -> None:
    hostile = "@everyone_here see evil.example.com or https://x.io /kick #union"
    sent = await bot.send_message(scene.group.id, hostile)
    safe = await bot.send_message(scene.group.id, "@\u2060everyone_here")
    html = await bot.send_message(
        scene.group.id, '<a href="tg://user?id=42">hi</a> &lt;b&gt;', parse_mode="HTML"
    )
    assert [e.type for e in sent.entities or []] == [
        "mention", "url", "url", "bot_command", "hashtag",
    ]  # fmt: skip
    assert not safe.entities  # a word joiner after @ defuses the mention
    assert html.text == "hi <b>"
    assert html.entities
    assert html.entities[0].type == "text_mention"


# ---------------------------------------------------------------- errors

if TYPE_CHECKING:
    Case = Callable[[FakeTelegram, Bot, Scene], Awaitable[Any]]


async def _kicked(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    group = f.add_group("Old", supergroup=False)
    f.set_bot_status(group, "kicked")
    return await b.send_message(group.id, "x")


async def _not_member(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    return await b.send_message(f.add_group("Other", bot="left").id, "x")


async def _channel_no_rights(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    return await b.send_message(f.add_channel("News", bot_rights={"can_manage_chat"}).id, "x")


async def _blocked(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    f.block_bot(s.alice)
    return await b.send_message(s.dm.id, "x")


async def _never_started(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    return await b.send_message(f.private_chat(s.bob, started=False).id, "x")


async def _edit_deleted(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    sent = await b.send_message(s.dm.id, "x")
    await b.delete_message(s.dm.id, sent.message_id)
    return await b.edit_message_text("y", chat_id=s.dm.id, message_id=sent.message_id)


async def _edit_unchanged(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    sent = await b.send_message(s.dm.id, "<b>x</b>", parse_mode="HTML")
    return await b.edit_message_text(
        "*x*", chat_id=s.dm.id, message_id=sent.message_id, parse_mode="MarkdownV2"
    )


async def _edit_theirs(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    theirs = f.command(s.group, s.bob, "/count").message
    return await b.edit_message_text("y", chat_id=s.group.id, message_id=theirs.message_id)


async def _delete_theirs(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    theirs = f.user_says(s.group, s.bob, "hello").message
    return await b.delete_message(s.group.id, theirs.message_id)


async def _pin_without_rights(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    sent = await b.send_message(s.group.id, "x")
    return await b.pin_chat_message(s.group.id, sent.message_id)


async def _delete_twice(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    sent = await b.send_message(s.dm.id, "x")
    await b.delete_message(s.dm.id, sent.message_id)
    return await b.delete_message(s.dm.id, sent.message_id)


async def _not_an_image(f: FakeTelegram, b: Bot, s: Scene) -> Any:
    from aiogram.types import BufferedInputFile

    return await b.send_photo(s.dm.id, BufferedInputFile(b"GIF89a", "a.gif"))


# The error is named, not given as its class: the list is made when the module is collected, and
# importing aiogram then would cost every pytest-xdist worker ~5.5 CPU-s (see tests/conftest.py).
ERRORS: list[tuple[str, Case, str, str]] = [
    ("html", lambda f, b, s: b.send_message(s.dm.id, "1 < 2", parse_mode="HTML"),
     "TelegramBadRequest", 'can\'t parse entities: Unsupported start tag "" at byte offset 2'),
    ("html-nesting", lambda f, b, s: b.send_message(s.dm.id, "<b>x</i>", parse_mode="HTML"),
     "TelegramBadRequest", 'Unmatched end tag at byte offset 4, expected "</b>", found "</i>"'),
    ("markdownv2", lambda f, b, s: b.send_message(s.dm.id, "Margin 1.5", parse_mode="MarkdownV2"),
     "TelegramBadRequest", "Character '.' is reserved and must be escaped with the preceding '\\'"),
    ("markdownv2-open", lambda f, b, s: b.send_message(s.dm.id, "*x", parse_mode="MarkdownV2"),
     "TelegramBadRequest", "can't parse entities: Can't find end of Bold entity at byte offset 0"),
    ("parse-mode", lambda f, b, s: b.send_message(s.dm.id, "x", parse_mode="BBCode"),
     "TelegramBadRequest", "Bad Request: unsupported parse_mode"),
    ("empty", lambda f, b, s: b.send_message(s.dm.id, " "),
     "TelegramBadRequest", "Bad Request: message text is empty"),
    ("chat", lambda f, b, s: b.send_message(424242, "x"),
     "TelegramBadRequest", "Bad Request: chat not found"),
    ("kicked", _kicked, "TelegramForbiddenError", "Forbidden: bot was kicked from the group chat"),
    ("not-member", _not_member,
     "TelegramForbiddenError", "Forbidden: bot is not a member of the supergroup chat"),
    ("channel-rights", _channel_no_rights,
     "TelegramBadRequest", "Bad Request: need administrator rights in the channel chat"),
    ("blocked", _blocked, "TelegramForbiddenError", "Forbidden: bot was blocked by the user"),
    ("not-started", _never_started,
     "TelegramForbiddenError", "Forbidden: bot can't initiate conversation with a user"),
    ("edit-deleted", _edit_deleted, "TelegramBadRequest", "Bad Request: message to edit not found"),
    ("not-modified", _edit_unchanged,
     "TelegramBadRequest", "Bad Request: message is not modified: "),
    ("edit-theirs", _edit_theirs, "TelegramBadRequest", "Bad Request: message can't be edited"),
    ("delete-theirs", _delete_theirs,
     "TelegramBadRequest", "Bad Request: message can't be deleted"),
    ("delete-twice", _delete_twice,
     "TelegramBadRequest", "Bad Request: message to delete not found"),
    ("pin-rights", _pin_without_rights, "TelegramBadRequest",
     "Bad Request: not enough rights to manage pinned messages in the chat"),
    ("button-data", lambda f, b, s: b.send_message(s.dm.id, "x", reply_markup=button("d" * 65)),
     "TelegramBadRequest", "Bad Request: BUTTON_DATA_INVALID"),
    ("not-an-image", _not_an_image,
     "TelegramBadRequest", "Bad Request: IMAGE_PROCESS_FAILED"),
    ("photo-url", lambda f, b, s: b.send_photo(s.dm.id, "http://10.0.0.1/chart.png"),
     "TelegramBadRequest", "Bad Request: failed to get HTTP URL content"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "error", "description"), [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])  # fmt: skip
async def test_errors_as_telegram_words_them(
    fake: FakeTelegram,
    bot: Bot,
    scene: Scene,
    case: Case,
    error: str,
    description: str,
) -> None:
    from aiogram import exceptions

    raised: type[TelegramAPIError] = getattr(exceptions, error)
    with pytest.raises(raised) as info:
        await case(fake, bot, scene)
    assert description in info.value.message
    last = fake.requests[-1]
    assert not last.ok
    assert last.description == info.value.message
    assert last.status == {"TelegramBadRequest": 400, "TelegramForbiddenError": 403}[error]


async def test_an_upgraded_group_answers_with_its_new_id(
    fake: FakeTelegram, bot: Bot, scene: Scene
) -> None:
    from aiogram.exceptions import TelegramMigrateToChat

    old = fake.add_group("Local 1", supergroup=False)
    new = fake.migrate_to_supergroup(old)
    with pytest.raises(TelegramMigrateToChat) as info:
        await bot.send_message(old.id, "x")
    assert info.value.migrate_to_chat_id == new.id
    assert (await bot.send_message(new.id, "x")).chat.type == "supergroup"
