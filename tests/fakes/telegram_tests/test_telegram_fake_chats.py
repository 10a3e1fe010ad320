"""FakeTelegram's chats and members (admin status), the command menu and button presses."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram

if TYPE_CHECKING:
    from aiogram import Bot


async def test_member_status_per_user_and_chat(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramBadRequest
    from aiogram.types import ChatMemberAdministrator, ChatMemberOwner

    owner, alice, bob, carol = (fake.add_user(n) for n in ("Owner", "Alice", "Bob", "Carol"))
    group = fake.add_group("Union hall", owner=owner)
    fake.add_member(group, alice, "administrator", {"can_pin_messages", "can_delete_messages"})
    fake.add_member(group, bob)
    other = fake.add_group("Other union")
    fake.add_member(other, carol, "administrator")

    statuses = [(await bot.get_chat_member(group.id, u.id)).status for u in (owner, alice, bob)]
    assert statuses == ["creator", "administrator", "member"]
    assert (await bot.get_chat_member(group.id, carol.id)).status == "left"  # admin elsewhere
    admin = await bot.get_chat_member(group.id, alice.id)
    assert isinstance(admin, ChatMemberAdministrator)
    assert (admin.can_pin_messages, admin.can_delete_messages, admin.can_promote_members) == (
        True,
        True,
        False,
    )
    admins = await bot.get_chat_administrators(group.id)
    assert [(type(a), a.user.id) for a in admins] == [
        (ChatMemberOwner, owner.id),
        (ChatMemberAdministrator, alice.id),
    ]
    fake.add_member(group, alice, "kicked")
    assert (await bot.get_chat_member(group.id, alice.id)).status == "kicked"
    with pytest.raises(TelegramBadRequest, match="user not found"):
        await bot.get_chat_member(group.id, 999)
    with pytest.raises(TelegramBadRequest, match="no administrators in the private chat"):
        await bot.get_chat_administrators(fake.private_chat(bob).id)


async def test_the_bot_in_channels_groups_and_private_chats(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramForbiddenError
    from aiogram.types import ChatMemberAdministrator

    alice = fake.add_user("Alice", "alice")
    channel = fake.add_channel("Count news", username="countnews")
    basic = fake.add_group("Local 1", supergroup=False, bot="administrator")
    dm = fake.private_chat(alice)

    me_in_channel = await bot.get_chat_member("@countnews", fake.bot.id)
    assert isinstance(me_in_channel, ChatMemberAdministrator)
    assert me_in_channel.can_post_messages
    post = await bot.send_message(channel.id, "Bessemer: No leads")
    assert post.sender_chat is not None
    assert (post.sender_chat.id, post.from_user) == (channel.id, None)
    chats = [await bot.get_chat(c) for c in (channel.id, basic.id, dm.id)]
    assert [(c.type, c.title, c.first_name) for c in chats] == [
        ("channel", "Count news", None),
        ("group", "Local 1", None),
        ("private", None, "Alice"),
    ]
    assert (await bot.get_chat_member(dm.id, alice.id)).status == "member"
    fake.set_bot_status(basic, "left")
    with pytest.raises(TelegramForbiddenError, match="bot is not a member of the group chat"):
        await bot.get_chat(basic.id)
    (update,) = await bot.get_updates()
    assert update.my_chat_member is not None
    assert update.my_chat_member.new_chat_member.status == "left"


async def test_message_ids_count_per_chat_only_in_supergroups_and_channels(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    alice = fake.add_user("Alice")
    group, dm_a, dm_b = (
        fake.add_group("Hall"),
        fake.private_chat(alice),
        fake.private_chat(fake.add_user("Bob")),
    )
    ids = []
    for chat in (group, dm_a, dm_b, group, dm_a):
        ids.append((await bot.send_message(chat.id, "x")).message_id)
    assert ids[0] == 1
    assert ids[3] == 2  # the supergroup counts on its own
    assert ids[1:3] == [1, 2]
    assert ids[4] == 3  # private chats share the account's counter


async def test_the_command_menu_by_scope_and_language(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramBadRequest
    from aiogram.types import BotCommand, BotCommandScopeChat

    group = fake.add_group("Union hall")
    count = BotCommand(command="count", description="Vote counts: status, final, audit")
    assert await bot.set_my_commands([count])
    assert await bot.set_my_commands(
        [BotCommand(command="count", description="Stimmen")], language_code="de"
    )
    scope = BotCommandScopeChat(chat_id=group.id)
    assert await bot.set_my_commands([count, BotCommand(command="subscribe", description="Sub")],
                                     scope=scope)  # fmt: skip
    assert [c.command for c in await bot.get_my_commands()] == ["count"]
    assert [c.description for c in await bot.get_my_commands(language_code="de")] == ["Stimmen"]
    assert [c.command for c in await bot.get_my_commands(scope=scope)] == ["count", "subscribe"]
    assert fake.commands("chat", group)[1]["command"] == "subscribe"
    with pytest.raises(TelegramBadRequest, match="BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand(command="Count-Votes", description="x")])
    assert await bot.delete_my_commands(scope=scope)
    assert await bot.get_my_commands(scope=scope) == []


async def test_a_button_press_and_its_answer(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramBadRequest
    from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    keyboard = InlineKeyboardMarkup(
        inline_keyboard=[[InlineKeyboardButton(text="Refresh", callback_data="refresh:bessemer")]]
    )
    sent = await bot.send_message(dm.id, "Yes 10", reply_markup=keyboard)
    (stored,) = fake.messages(dm)
    with pytest.raises(ValueError, match="no button"):
        fake.press_button(stored, alice, "delete-everything")
    query_id = fake.press_button(stored, alice, "refresh:bessemer")
    (update,) = await bot.get_updates()
    query = update.callback_query
    assert query is not None
    assert (query.id, query.data, query.from_user.id) == (query_id, "refresh:bessemer", alice.id)
    assert query.message is not None
    assert query.message.message_id == sent.message_id
    assert await bot.answer_callback_query(query_id, text="Updated")
    assert fake.callback_answers(query_id) == [{"text": "Updated", "show_alert": False}]
    with pytest.raises(TelegramBadRequest, match="query is too old"):
        await bot.answer_callback_query(query_id)  # only once
    late = fake.press_button(stored, alice, "refresh:bessemer")
    clock.advance(16)
    with pytest.raises(TelegramBadRequest, match="query is too old"):
        await bot.answer_callback_query(late)
