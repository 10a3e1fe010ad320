"""A lost answer, and how close to exactly once a Telegram post can get (docs/telegram.md).

Telegram has no idempotency key and a bot cannot read a chat's history, so after a send
whose answer was lost the bot cannot look its post up. What it can do: send again
silently, then probe the ids between the last post it knows and the new one with an edit
to the very same content. "message is not modified" means the lost send landed there (so
the silent copy is deleted); "not found" or "can't be edited" means that id is not ours.
``send_once`` below is that protocol as the adapter will run it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram, FloodLimits

if TYPE_CHECKING:
    from aiogram import Bot


@pytest.fixture
async def fake(clock: FakeClock) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(clock=clock.monotonic, limits=FloodLimits(chat_burst=10)) as f:
        yield f


async def send_once(
    bot: Bot,
    chat_id: int,
    text: str,
    last_known_id: int,
    *,
    ambiguous: bool = False,
    meanwhile: Callable[[], object] = lambda: None,
) -> int:
    """Post ``text`` once, even if an answer is lost; returns the id of the one copy kept.

    ``ambiguous``: an earlier attempt may have landed (e.g. after a crash), so go straight
    to the repair. Every id between ``last_known_id`` and the silent retry is probed, and
    the lowest copy found is kept: repeated attempts converge on one copy.
    ``meanwhile`` lets a test have the world move between the lost send and the retry.
    """
    from aiogram.exceptions import TelegramBadRequest, TelegramNetworkError

    if not ambiguous:
        try:
            return (await bot.send_message(chat_id, text)).message_id
        except TelegramNetworkError as exc:
            if isinstance(exc.__cause__, aiohttp.ClientConnectorError):
                raise  # never reached Telegram: a plain retry is safe (the caller's job)
        meanwhile()
    retry = await bot.send_message(chat_id, text, disable_notification=True)
    copies = [retry.message_id]
    for candidate in range(retry.message_id - 1, last_known_id, -1):
        try:
            await bot.edit_message_text(text, chat_id=chat_id, message_id=candidate)
        except TelegramBadRequest as probe:
            if "message is not modified" in probe.message:
                copies.append(candidate)
            continue  # "message to edit not found" / "message can't be edited": not ours
        raise AssertionError(f"probe edited message {candidate}: another post of ours in between")
    keep = min(copies)
    for extra in sorted(set(copies) - {keep}):
        try:
            await bot.delete_message(chat_id, extra)
        except TelegramBadRequest as gone:
            if "message to delete not found" not in gone.message:
                raise
    return keep


async def test_a_lost_answer_was_carried_out(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramNetworkError

    dm = fake.private_chat(fake.add_user("Alice"))
    fake.lose_answer("sendMessage")
    with pytest.raises(TelegramNetworkError) as info:
        await bot.send_message(dm.id, "Yes 10 · No 7")
    assert isinstance(info.value.__cause__, aiohttp.ServerDisconnectedError)
    (record,) = fake.requests
    assert (record.lost, record.executed, record.ok, record.message_id) == (True, True, True, 1)
    assert [m.text for m in fake.visible(dm)] == ["Yes 10 · No 7"]
    assert fake.accepted == [record]


async def test_a_dropped_request_was_not(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramNetworkError

    dm = fake.private_chat(fake.add_user("Alice"))
    fake.drop_request("sendMessage")
    with pytest.raises(TelegramNetworkError) as info:
        await bot.send_message(dm.id, "Yes 10 · No 7")
    assert isinstance(info.value.__cause__, aiohttp.ServerDisconnectedError)  # same to the client
    (record,) = fake.requests
    assert (record.lost, record.executed) == (True, False)
    assert fake.visible(dm) == []
    assert fake.accepted == []


@pytest.mark.parametrize("commit", [True, False])
async def test_a_server_error_may_or_may_not_have_been_carried_out(
    fake: FakeTelegram, bot: Bot, commit: bool
) -> None:
    from aiogram.exceptions import TelegramServerError

    dm = fake.private_chat(fake.add_user("Alice"))
    fake.fail_next("sendMessage", status=502, commit=commit)
    with pytest.raises(TelegramServerError, match="Bad Gateway"):
        await bot.send_message(dm.id, "x")
    assert len(fake.visible(dm)) == (1 if commit else 0)


async def test_a_blind_retry_after_a_lost_answer_posts_twice(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramNetworkError

    group = fake.add_group("Union hall")
    fake.lose_answer("sendMessage")
    with pytest.raises(TelegramNetworkError):
        await bot.send_message(group.id, "Final: No wins")
    await bot.send_message(group.id, "Final: No wins")
    assert [m.text for m in fake.visible(group)] == ["Final: No wins"] * 2


async def test_send_once_repairs_a_lost_answer(fake: FakeTelegram, bot: Bot) -> None:
    alice = fake.add_user("Alice")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    last = (await bot.send_message(group.id, "Yes 10 · No 7")).message_id
    fake.lose_answer("sendMessage")
    # A member talks between the lost send and the retry: that id sits in the probe window.
    posted = await send_once(
        bot,
        group.id,
        "Final: No wins",
        last,
        meanwhile=lambda: fake.user_says(group, alice, "any news?"),
    )
    original = fake.messages(group)[1]
    assert (posted, original.text, original.disable_notification) == (2, "Final: No wins", False)
    assert [m.text for m in fake.visible(group)] == ["Yes 10 · No 7", "Final: No wins", "any news?"]
    methods = [(r.method, r.status, r.lost) for r in fake.requests[1:]]
    assert methods == [
        ("sendMessage", 200, True),
        ("sendMessage", 200, False),  # the silent retry (id 4)
        ("editMessageText", 400, False),  # id 3: alice's, "message can't be edited"
        ("editMessageText", 400, False),  # id 2: "message is not modified": found
        ("deleteMessage", 200, False),
    ]
    assert fake.calls_to("sendMessage")[-1].args["disable_notification"] is True


async def test_send_once_keeps_the_retry_when_the_first_send_never_happened(
    fake: FakeTelegram, bot: Bot
) -> None:
    alice, bob = fake.add_user("Alice"), fake.add_user("Bob")
    dm, other = fake.private_chat(alice), fake.private_chat(bob)
    last = (await bot.send_message(dm.id, "Yes 10 · No 7")).message_id
    await bot.send_message(other.id, "Final: No wins")  # same text, another chat, same counter
    fake.drop_request("sendMessage")
    posted = await send_once(bot, dm.id, "Final: No wins", last)
    assert [m.text for m in fake.visible(dm)] == ["Yes 10 · No 7", "Final: No wins"]
    assert fake.visible(dm)[1].message_id == posted
    assert fake.visible(dm)[1].disable_notification  # the one copy arrived silently
    probes = fake.calls_to("editMessageText")
    assert [p.description for p in probes] == ["Bad Request: message to edit not found"]
    assert [m.text for m in fake.visible(other)] == ["Final: No wins"]  # untouched


async def test_send_once_converges_after_a_crash_mid_repair(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramNetworkError

    group = fake.add_group("Union hall")
    last = (await bot.send_message(group.id, "Yes 10 · No 7")).message_id
    fake.lose_answer("sendMessage", times=2)  # the send and its silent retry both land unseen
    with pytest.raises(TelegramNetworkError):
        await send_once(bot, group.id, "Final: No wins", last)
    assert len(fake.visible(group)) == 3  # two copies: the worker "crashed" here
    posted = await send_once(bot, group.id, "Final: No wins", last, ambiguous=True)
    assert [m.text for m in fake.visible(group)] == ["Yes 10 · No 7", "Final: No wins"]
    assert posted == fake.visible(group)[1].message_id == last + 1
    assert [m.message_id for m in fake.messages(group) if m.deleted] == [last + 2, last + 3]
