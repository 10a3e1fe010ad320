"""Exactly once after a lost answer (probe and repair) against the fake: the lost send found
and the silent copy deleted, a send that never happened, a crash mid-repair, a command reply in
the window, photos, and the honest limits (the window cap, a copy that cannot be deleted)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pytest

from adapters.telegram.render import render
from bot.domain.message import Attachment, Notice
from bot.errors import TransientDeliveryError
from bot.store.sent_ledger import Copy
from tests.adapters.telegram.conftest import shown
from tests.fakes.telegram_fake import FakeTelegram, FloodLimits
from tests.fakes.telegram_fake.testing import png
from tests.helpers import bessemer
from tests.test_format import bessemer_timeline, replay_messages

if TYPE_CHECKING:
    from aiogram import Bot

    from adapters.telegram.send import Outgoing


@pytest.fixture
async def fake() -> object:
    async with FakeTelegram(limits=FloodLimits(chat_burst=50, group_per_min=None)) as f:
        yield f


@functools.cache
def final() -> Outgoing:
    """The final result as it goes out (made on first use: Outgoing's module imports aiogram)."""
    from adapters.telegram.send import Outgoing

    return Outgoing(render(replay_messages(bessemer(), bessemer_timeline())[-1]))


@functools.cache
def board() -> Outgoing:
    """A board as it goes out."""
    from adapters.telegram.send import Outgoing

    return Outgoing(render(Notice("Yes 10 · No 7")))


def texts(fake: FakeTelegram, chat: object) -> list[str]:
    return [shown(m).split("\n")[0] for m in fake.visible(chat)]  # type: ignore[arg-type]


async def test_a_normal_post_settles_the_ledger(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger = fake.add_group("Union hall"), MemoryLedger()
    posted = await post_once(TelegramSender(bot), ledger, group.id, board(), "board")
    assert (posted.message_id, posted.repaired) == (1, False)
    known = await ledger.known(group.id, "board")
    assert (known.copies, known.doubt) == ((Copy(1, silent=False),), None)


async def test_a_lost_answer_is_repaired_to_one_copy(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    alice = fake.add_user("Alice")
    group, ledger = fake.add_group("Union hall"), MemoryLedger()
    fake.add_member(group, alice)
    sender = TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage")
    fake.user_says(group, alice, "/count status")  # a member's message in the window... later:
    posted = await post_once(sender, ledger, group.id, final(), "final")
    finals = [m for m in fake.visible(group) if m.source == "sendMessage"]
    assert [m.message_id for m in finals] == [1, posted.message_id]
    assert finals[1].disable_notification is False  # the original, with its notification
    assert posted.repaired
    assert len(posted.removed) == 1
    assert not posted.possible_duplicate
    assert [m.message_id for m in fake.messages(group) if m.deleted] == list(posted.removed)
    assert (await ledger.known(group.id, "final")).doubt is None


async def test_a_send_that_never_happened_is_sent_again_notified(
    fake: FakeTelegram, bot: Bot
) -> None:
    """Only the repair's silent copy was found: members were never notified, so it goes and
    the post is sent again with its notification."""
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    dm = fake.private_chat(fake.add_user("Alice"))
    ledger, sender = MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, dm.id, board(), "board")
    fake.drop_request("sendMessage")
    posted = await post_once(sender, ledger, dm.id, final(), "final")
    kept = fake.visible(dm)[-1]
    assert len(fake.visible(dm)) == 2
    assert kept.message_id == posted.message_id
    assert not kept.disable_notification
    assert posted.resent
    assert [m.disable_notification for m in fake.messages(dm) if m.deleted] == [True]


@pytest.mark.parametrize("crash", ["silent send lost", "probe fails", "delete fails"])
async def test_a_crash_mid_repair_converges(fake: FakeTelegram, bot: Bot, crash: str) -> None:
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage")
    if crash == "silent send lost":
        fake.lose_answer("sendMessage")
    elif crash == "probe fails":
        fake.fail_next("editMessageText", status=502)
    else:
        fake.fail_next("deleteMessage", status=503)
    with pytest.raises(TransientDeliveryError):
        await post_once(sender, ledger, group.id, final(), "final")
    assert len(fake.visible(group)) == 3  # two copies: the worker "crashed" here
    # The restarted worker finds the delivery in doubt: one more silent send, then the repair.
    posted = await post_once(TelegramSender(bot), ledger, group.id, final(), "final", in_doubt=True)
    assert len(fake.visible(group)) == 2
    assert posted.message_id == fake.visible(group)[1].message_id
    assert not fake.visible(group)[1].disable_notification
    assert not posted.possible_duplicate
    assert (posted.message_id, posted.resent) == (2, False)  # the lost original is kept
    assert notified(fake, group) == [2]  # members were notified of it once


def notified(fake: FakeTelegram, chat: object) -> list[int]:
    """The messages carrying the final that were sent with a notification, deleted or not."""
    return [
        m.message_id
        for m in fake.messages(chat)  # type: ignore[arg-type]
        if not m.disable_notification and m.text is not None and final().text.plain in m.text
    ]


async def test_a_repair_whose_silent_send_is_lost_too_notifies_once(
    fake: FakeTelegram, bot: Bot
) -> None:
    """The post's answer is lost, then the repair's silent send's: the next repair finds two
    copies it has no answer for, the notified original and a silent one. The silent one shows
    the post's quiet text, so the probe tells them apart: the original stays, the silent
    copies go, and nothing is sent again with a notification."""
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage", times=2)  # the original (2) and the silent copy (3)
    with pytest.raises(MaybeSent):
        await post_once(sender, ledger, group.id, final(), "final")
    posted = await post_once(sender, ledger, group.id, final(), "final", in_doubt=True)
    (kept,) = [m for m in fake.visible(group) if m.message_id != 1]
    assert (kept.message_id, kept.disable_notification) == (posted.message_id, False)
    assert kept.text == final().text.plain  # as sent, not the quiet text
    assert notified(fake, group) == [2]
    assert sorted(posted.removed) == [3, 4]
    assert (await ledger.known(group.id, "final")).doubt is None


async def test_a_command_reply_in_the_window_is_left_alone(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage")
    with pytest.raises(MaybeSent):
        await sender.send(group.id, final())  # the lost original (id 2); then a crash
    reply = await bot.send_message(group.id, "Subscribed this channel to bessemer-2021.")
    await ledger.note_other(group.id, reply.message_id)
    await post_once(sender, ledger, group.id, final(), "final", in_doubt=True)
    assert [m.message_id for m in fake.visible(group)] == [1, 2, 3]
    assert fake.visible(group)[2].text == "Subscribed this channel to bessemer-2021."
    assert fake.visible(group)[2].revisions == []  # never probed


async def test_an_unknown_reply_of_ours_is_never_a_second_copy(
    fake: FakeTelegram, bot: Bot
) -> None:
    """A reply the ledger missed takes the probe's edit: it then shows the post, so it is
    cleaned up as a copy. The post is still shown once."""
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    await bot.send_message(group.id, "a reply whose answer was lost")
    fake.lose_answer("sendMessage")
    posted = await post_once(sender, ledger, group.id, final(), "final")
    finals = [m for m in fake.visible(group) if m.text == final().text.plain]
    assert [m.message_id for m in finals] == [posted.message_id] == [3]  # the notified one


async def test_a_lost_photo_is_found_by_its_caption(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import Outgoing, TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    chart = Outgoing(final().text, Attachment("c.png", png(8, 6), "chart"))
    fake.lose_answer("sendPhoto")
    posted = await post_once(sender, ledger, group.id, chart, "final")
    photos = [m for m in fake.visible(group) if m.photo is not None]
    assert [m.message_id for m in photos] == [posted.message_id] == [2]
    assert [r.method for r in fake.requests[-3:]] == [
        "sendPhoto", "editMessageCaption", "deleteMessage",
    ]  # fmt: skip


async def test_past_the_window_a_possible_duplicate_is_reported(
    fake: FakeTelegram, bot: Bot
) -> None:
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    alice = fake.add_user("Alice")
    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    fake.add_member(group, alice)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage")
    with pytest.raises(MaybeSent):
        await sender.send(group.id, final())
    for i in range(6):
        fake.user_says(group, alice, f"busy chat {i}")
    posted = await post_once(sender, ledger, group.id, final(), "final", in_doubt=True, window=3)
    assert posted.possible_duplicate
    assert posted.probes == 3
    assert len([m for m in fake.visible(group) if m.source == "sendMessage"]) == 3  # honest


async def test_a_copy_that_cannot_be_deleted_is_reported(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.once import MemoryLedger, post_once
    from adapters.telegram.send import TelegramSender

    group, ledger, sender = fake.add_group("Union hall"), MemoryLedger(), TelegramSender(bot)
    await post_once(sender, ledger, group.id, board(), "board")
    fake.lose_answer("sendMessage")
    fake.fail_next("deleteMessage", status=400, description="Bad Request: message can't be deleted")
    posted = await post_once(sender, ledger, group.id, final(), "final")
    assert posted.possible_duplicate
    assert posted.removed == ()
