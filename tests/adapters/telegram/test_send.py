"""Single requests against the fake: post, photo, edit, and every error class, paced by the
core's Pacer with Telegram's buckets on an injected clock."""

from __future__ import annotations

import asyncio
import socket
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

import pytest

from adapters.telegram.limits import GROUP_EDITS, PROBE, PROBES, TELEGRAM_LIMITS, route
from adapters.telegram.render import render
from bot.delivery.pacing import Pacer, Route
from bot.domain.message import Attachment, Notice
from bot.errors import (
    MessageGone,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)
from bot.testing.clock import FakeClock
from tests.adapters.telegram.conftest import shown
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import aiogram_bot, png

if TYPE_CHECKING:
    from aiogram import Bot

    from adapters.telegram.send import Outgoing

CHART = Attachment("bessemer-2021.png", png(8, 6), "Chart of the count")


def out(text: str) -> Outgoing:
    from adapters.telegram.send import Outgoing

    return Outgoing(render(Notice(text)))


async def test_post_edit_and_photo(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.send import Outgoing, TelegramSender

    group = fake.add_group("Union hall")
    sender = TelegramSender(bot)
    board = await sender.send(group.id, out("Yes 10 · No 7"))
    await sender.edit(group.id, board, out("Yes 12 · No 9"))
    await sender.edit(group.id, board, out("Yes 12 · No 9"))  # not modified: success
    photo = await sender.send(group.id, Outgoing(render(Notice("Final")), CHART))
    await sender.edit(group.id, photo, Outgoing(render(Notice("Final, checked")), CHART))
    first, second = fake.visible(group)
    assert shown(first).endswith("Yes 12 · No 9")
    assert len(first.revisions) == 1
    assert second.photo is not None
    assert shown(second).endswith("Final, checked")
    assert [r.method for r in fake.requests] == [
        "sendMessage", "editMessageText", "editMessageText", "sendPhoto", "editMessageCaption",
    ]  # fmt: skip
    assert fake.requests[2].status == 400  # "message is not modified", taken as done


async def test_an_edit_of_a_gone_message(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.send import Probe, TelegramSender

    group = fake.add_group("Union hall")
    sender = TelegramSender(bot)
    board = await sender.send(group.id, out("Yes 10"))
    await bot.delete_message(group.id, board)
    with pytest.raises(MessageGone, match="message to edit not found"):
        await sender.edit(group.id, board, out("Yes 11"))
    alice = fake.add_user("Alice")
    fake.add_member(group, alice)
    theirs = fake.user_says(group, alice, "hello").message.message_id
    with pytest.raises(MessageGone, match="can't be edited"):
        await sender.edit(group.id, theirs, out("Yes 11"))
    assert await sender.probe(group.id, theirs, out("Yes 11")) is Probe.NOT_OURS


async def test_errors_become_delivery_errors(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.send import TelegramSender

    sender = TelegramSender(bot)
    group = fake.add_group("Union hall")
    alice = fake.add_user("Alice")
    fake.fail_next("sendMessage", status=429, retry_after=7)
    with pytest.raises(RateLimited) as limited:
        await sender.send(group.id, out("x"))
    assert limited.value.retry_after == 7
    fake.set_bot_status(group, "kicked")
    with pytest.raises(PermanentDeliveryError, match="kicked") as kicked:
        await sender.send(group.id, out("x"))
    assert str(kicked.value).endswith("add the bot to the group again")  # not "in a channel"
    news = fake.add_channel("News")
    fake.set_bot_status(news, "kicked")
    with pytest.raises(PermanentDeliveryError, match="kicked") as kicked:
        await sender.send(news.id, out("x"))
    assert "channel again, as an administrator who may post" in str(kicked.value)
    fake.set_bot_status(group, "left")
    with pytest.raises(PermanentDeliveryError, match="not a member"):
        await sender.send(group.id, out("x"))
    fake.block_bot(alice)
    with pytest.raises(PermanentDeliveryError, match="blocked"):
        await sender.send(alice.id, out("x"))
    with pytest.raises(PermanentDeliveryError, match="chat not found"):
        await sender.send(-100999, out("x"))
    for status in (500, 502):
        fake.fail_next("sendMessage", status=status)
        with pytest.raises(MaybeSent):
            await sender.send(alice.id, out("x"))
    assert not issubclass(MaybeSent, PermanentDeliveryError)


async def test_a_lost_answer_may_have_been_sent(fake: FakeTelegram, bot: Bot) -> None:
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.send import TelegramSender

    dm = fake.private_chat(fake.add_user("Alice"))
    sender = TelegramSender(bot)
    fake.lose_answer("sendMessage")
    with pytest.raises(MaybeSent):
        await sender.send(dm.id, out("x"))
    fake.drop_request("sendMessage")  # not carried out, but the client cannot tell
    with pytest.raises(MaybeSent):
        await sender.send(dm.id, out("x"))
    assert len(fake.visible(dm)) == 1


async def test_a_refused_connection_was_surely_not_sent(fake: FakeTelegram) -> None:
    from adapters.telegram.errors import MaybeSent
    from adapters.telegram.send import TelegramSender

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    async with aiogram_bot(fake) as bot:
        bot.session.api = bot.session.api.from_base(f"http://127.0.0.1:{port}")
        with pytest.raises(TransientDeliveryError) as info:
            await TelegramSender(bot).send(1, out("x"))
    assert not isinstance(info.value, MaybeSent)
    assert fake.requests == []


async def test_paced_by_telegram_buckets_no_429(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    """25 posts to one group and 5 to a private chat, at once: the group's 20 per minute and
    1 per second per chat hold, and the fake (3 at once, then 1 per second) never answers 429."""
    from adapters.telegram.send import TelegramSender

    group = fake.add_group("Union hall")
    dm = fake.private_chat(fake.add_user("Alice"))

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    pacer = Pacer(TELEGRAM_LIMITS, clock, sleep)
    sender = TelegramSender(bot)
    start = clock.monotonic()

    def pace(route: Route, *, delivers: bool = False) -> AbstractAsyncContextManager[None]:
        return pacer.slot(route)

    async def post(chat: int, i: int) -> None:
        await sender.send(chat, out(f"#{i}"), pace=pace)

    await asyncio.gather(
        *(post(group.id, i) for i in range(25)), *(post(dm.id, i) for i in range(5))
    )
    assert fake.rate_limited == []
    assert len(fake.visible(group)) == 25
    assert len(fake.visible(dm)) == 5
    assert clock.monotonic() - start >= 60  # the 21st post to the group waited a minute
    assert route("sendMessage", group.id).method == "sendMessage in group"
    assert route("editMessageText", dm.id).method == "editMessageText"


def test_probes_are_paced_as_probes_not_as_group_edits() -> None:
    """A probe changes nothing (answered "not modified" or "not found"): it draws from the
    probes bucket (30 a second), never from a group's 20 edits a minute."""
    group = -1001500000001
    assert TELEGRAM_LIMITS.buckets(route(PROBE, group)) == (PROBES,)
    assert GROUP_EDITS in TELEGRAM_LIMITS.buckets(route("editMessageText", group))
    assert PROBES.window.limit / PROBES.window.seconds >= 20
