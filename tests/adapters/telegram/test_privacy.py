"""The bot with Telegram's privacy mode on, as every bot has it unless its owner turns it off
with BotFather (issue 28 part 1): in a group it gets only commands meant for it, ``/count`` while
it was the last bot to speak there, ``/count@its_name`` always, and replies to its messages.
And a whole command line copied from the bot's words, where Telegram finds no command (the word
joiner after "/", render.py), is still read as typed wherever Telegram delivers it (part 3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.telegram.render import WORD_JOINER, Run, finish
from adapters.telegram.settings import TelegramSettings
from bot.commands.builtin import VERBS
from bot.commands.request import Reply
from bot.testing.clock import FakeClock
from tests.adapters.telegram.test_commands import Core, commands, handle_all
from tests.fakes.telegram_fake import FakeTelegram

if TYPE_CHECKING:
    from aiogram import Bot

LINE = (
    "/count create local-7 choices=yes:Yes,no:No rule=threshold threshold=2/3 "
    "source=https://x.org/r Local 7 vote"
)


async def test_a_group_with_another_bot_still_reaches_this_one(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from adapters.telegram.once import MemoryLedger

    alice, poll = fake.add_user("Alice", "alice"), fake.add_user("Poll", "pollbot", is_bot=True)
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    fake.add_member(group, poll)
    core = Core(Reply("ok"))
    tc = commands(bot, clock, core, TelegramSettings(), MemoryLedger())
    fake.command(group, alice, "/count status bessemer-2021")  # no bot spoke: it arrives
    fake.user_says(group, poll, "Lunch poll: pizza or soup?")
    fake.command(group, alice, "/count status staten-island")  # the poll bot spoke last
    fake.command(group, alice, "/count@tallybot status island")  # as the menu sends it
    await handle_all(bot, tc)
    assert [r.text for r in core.requests] == ["status bessemer-2021", "status island"]
    await bot.send_message(group.id, "Live: 463 to 1,100")  # this bot spoke last again
    fake.command(group, alice, "/count status again")
    await handle_all(bot, tc)
    assert core.requests[-1].text == "status again"


async def test_a_command_line_copied_from_the_bot_is_read_as_typed(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from adapters.telegram.once import MemoryLedger

    shown = finish([Run(f"Follow it here with: {LINE}")]).plain
    copied = shown[shown.index("/") :]  # a member selects the line and copies it
    assert copied.startswith("/" + WORD_JOINER + "count")  # no command for Telegram
    alice = fake.add_user("Alice", "alice")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    core = Core(Reply("ok"))
    tc = commands(bot, clock, core, TelegramSettings(), MemoryLedger())

    fake.user_says(fake.private_chat(alice), alice, copied)  # private chats get every message
    lost = fake.user_says(group, alice, copied)  # privacy mode: a group's plain text is not
    assert lost.update_id is None
    ours = await bot.send_message(group.id, "Live: 463 to 1,100")
    (mine,) = [m for m in fake.visible(group) if m.message_id == ours.message_id]
    fake.user_says(group, alice, copied, reply_to=mine)  # a reply to the bot is delivered
    await handle_all(bot, tc)

    typed = LINE.removeprefix("/count ")
    assert [r.text for r in core.requests] == [typed, typed]
    assert VERBS.parse(core.requests[0].text) == VERBS.parse(typed)
