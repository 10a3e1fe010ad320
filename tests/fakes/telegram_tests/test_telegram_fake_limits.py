"""FakeTelegram's flood control and time windows, driven by an injected clock (no sleeps)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram, FloodLimits
from tests.fakes.telegram_fake.testing import aiogram_bot

if TYPE_CHECKING:
    from aiogram import Bot


async def test_a_chat_takes_a_short_burst_then_one_per_second(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramRetryAfter
    from aiogram.methods import SendMessage

    dm = fake.private_chat(fake.add_user("Alice"))
    for n in range(3):
        await bot.send_message(dm.id, f"burst {n}")
    with pytest.raises(TelegramRetryAfter) as info:
        await bot.send_message(dm.id, "one too many")
    assert info.value.retry_after == 1
    assert isinstance(info.value.method, SendMessage)
    assert len(fake.calls_to("sendMessage")) == 4  # aiogram does not retry by itself
    clock.advance(0.5)
    with pytest.raises(TelegramRetryAfter):
        await bot.send_message(dm.id, "still too early")
    clock.advance(0.5)
    await bot(info.value.method)  # the refused call, retried after retry_after
    for n in range(30):  # a steady 1 per second is fine
        clock.advance(1)
        await bot.send_message(dm.id, f"steady {n}")
    assert [h.scope for h in fake.rate_limited] == ["chat", "chat"]
    assert [m.text for m in fake.visible(dm)][3] == "one too many"
    assert len(fake.visible(dm)) == 34


async def test_a_group_takes_twenty_a_minute(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramRetryAfter

    group = fake.add_group("Union hall")
    for n in range(20):
        await bot.send_message(group.id, f"update {n}")
        clock.advance(1)
    with pytest.raises(TelegramRetryAfter) as info:
        await bot.send_message(group.id, "21st")
    hit = fake.rate_limited[-1]
    assert (hit.scope, hit.chat_id, hit.method) == ("group", group.id, "sendMessage")
    assert hit.wait == pytest.approx(40.0)  # the first of the 20 leaves the window at t=60
    assert info.value.retry_after == 40
    clock.advance(40)
    await bot.send_message(group.id, "21st, later")
    assert len(fake.visible(group)) == 21


async def test_about_thirty_a_second_overall(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramRetryAfter

    chats = [fake.private_chat(fake.add_user(f"U{n}")) for n in range(31)]
    for chat in chats[:30]:
        await bot.send_message(chat.id, "final results")
    with pytest.raises(TelegramRetryAfter):
        await bot.send_message(chats[30].id, "final results")
    assert fake.rate_limited[-1].scope == "overall"
    assert fake.rate_limited[-1].wait == pytest.approx(1 / 30)
    clock.advance(1 / 30 + 1e-9)
    await bot.send_message(chats[30].id, "final results")


async def test_edits_are_limited_in_groups_not_in_private_chats(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramRetryAfter

    group = fake.add_group("Union hall")
    dm = fake.private_chat(fake.add_user("Alice"))
    board = await bot.send_message(group.id, "Yes 0")
    private = await bot.send_message(dm.id, "Yes 0")
    for n in range(1, 41):
        await bot.edit_message_text(f"Yes {n}", chat_id=dm.id, message_id=private.message_id)
    for n in range(1, 21):
        await bot.edit_message_text(f"Yes {n}", chat_id=group.id, message_id=board.message_id)
    with pytest.raises(TelegramRetryAfter) as info:
        await bot.edit_message_text("Yes 21", chat_id=group.id, message_id=board.message_id)
    assert (fake.rate_limited[-1].scope, info.value.retry_after) == ("group_edit", 60)
    assert fake.visible(group)[0].text == "Yes 20"


async def test_a_429_on_the_wire(fake: FakeTelegram) -> None:
    dm = fake.private_chat(fake.add_user("Alice"))
    url = f"{fake.base_url}/bot{fake.token}/sendMessage"
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            async with session.post(url, json={"chat_id": dm.id, "text": "x"}) as resp:
                assert resp.status == 200
        async with session.post(url, json={"chat_id": dm.id, "text": "4th"}) as resp:
            body, headers, status = await resp.json(), resp.headers, resp.status
    assert status == 429
    assert headers["Content-Type"] == "application/json"
    assert headers["Retry-After"] == "1"
    assert body == {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1},
    }
    assert [m.text for m in fake.visible(dm)] == ["x", "x", "x"]  # the refused one left no trace
    assert fake.requests[-1].status == 429


async def test_injected_429_and_announced_retry_after(clock: FakeClock) -> None:
    from aiogram.exceptions import TelegramRetryAfter

    async with FakeTelegram(clock=clock.monotonic, limits=FloodLimits(retry_after=9)) as fake:
        dm = fake.private_chat(fake.add_user("Alice"))
        async with aiogram_bot(fake) as bot:
            fake.fail_next("sendMessage", status=429, retry_after=7)
            with pytest.raises(TelegramRetryAfter) as injected:
                await bot.send_message(dm.id, "x")
            for _ in range(3):
                await bot.send_message(dm.id, "x")
            with pytest.raises(TelegramRetryAfter) as announced:
                await bot.send_message(dm.id, "x")
    assert (injected.value.retry_after, announced.value.retry_after) == (7, 9)
    assert [h.scope for h in fake.rate_limited] == ["injected", "chat"]
    assert len(fake.visible(dm)) == 3


async def test_limits_can_be_switched_off(clock: FakeClock) -> None:
    off = FloodLimits(overall_per_s=None, chat_per_s=None, group_per_min=None)
    async with FakeTelegram(clock=clock.monotonic, limits=off) as fake:
        group = fake.add_group("Union hall")
        async with aiogram_bot(fake) as bot:
            for n in range(60):
                await bot.send_message(group.id, str(n))
    assert len(fake.visible(group)) == 60
    assert fake.rate_limited == []


async def test_deleting_is_possible_for_48_hours(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramBadRequest

    dm = fake.private_chat(fake.add_user("Alice"))
    early = await bot.send_message(dm.id, "early")
    late = await bot.send_message(dm.id, "late")
    clock.advance(48 * 3600)
    assert await bot.delete_message(dm.id, early.message_id)
    clock.advance(1)
    with pytest.raises(TelegramBadRequest, match="message can't be deleted for everyone"):
        await bot.delete_message(dm.id, late.message_id)
    assert [m.text for m in fake.visible(dm)] == ["late"]


async def test_message_dates_follow_the_injected_clock(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    dm = fake.private_chat(fake.add_user("Alice"))
    first = await bot.send_message(dm.id, "a")
    clock.advance(3600)
    second = await bot.send_message(dm.id, "b")
    assert (second.date - first.date).total_seconds() == 3600
