"""FakeTelegram's updates: commands injected and fetched by getUpdates or a webhook."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from aiohttp import web

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import ANONYMOUS_ADMIN_ID, SECRET_HEADER, FakeTelegram
from tests.fakes.telegram_fake.testing import aiogram_bot

if TYPE_CHECKING:
    from aiogram import Bot, Dispatcher
    from aiogram.filters import CommandObject
    from aiogram.methods import SendMessage
    from aiogram.types import Message


async def answer_count(message: Message, command: CommandObject) -> None:
    await message.answer(f"count: {command.args}")


def count_dispatcher() -> Dispatcher:
    from aiogram import Dispatcher
    from aiogram.filters import Command

    dp = Dispatcher()
    dp.message.register(answer_count, Command("count"))
    return dp


async def serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}/tg"


async def test_commands_arrive_by_get_updates_as_privacy_mode_allows(
    fake: FakeTelegram, bot: Bot
) -> None:
    alice = fake.add_user("Alice", "alice")
    group, news = fake.add_group("Union hall"), fake.add_channel("Count news")
    fake.add_member(group, alice, "administrator")
    assert fake.user_says(group, alice, "hello all").update_id is None
    assert fake.command(group, alice, "/count@otherbot x").update_id is None
    command = fake.command(group, alice, "/count status bessemer")
    addressed = fake.command(group, alice, "/count@TallyBot final bessemer")
    anonymous = fake.command(group, alice, "/count audit", anonymous=True)
    private = fake.user_says(fake.private_chat(alice), alice, "hi there")
    post = fake.channel_post(news, "/count status")

    updates = await bot.get_updates()
    assert [u.update_id for u in updates] == [
        i.update_id for i in (command, addressed, anonymous, private, post)
    ]
    first = updates[0].message
    assert first is not None
    assert (first.text, first.chat.id, first.chat.type) == (
        "/count status bessemer",
        group.id,
        "supergroup",
    )
    assert first.from_user is not None
    assert first.from_user.id == alice.id
    assert [(e.type, e.offset, e.length) for e in first.entities or []] == [("bot_command", 0, 6)]
    assert updates[1].message
    assert updates[1].message.entities
    assert updates[1].message.entities[0].length == len("/count@TallyBot")
    anon = updates[2].message
    assert anon
    assert anon.from_user
    assert anon.sender_chat
    assert (anon.from_user.id, anon.sender_chat.id) == (ANONYMOUS_ADMIN_ID, group.id)
    channel_post = updates[4].channel_post
    assert channel_post
    assert channel_post.sender_chat
    assert channel_post.from_user is None
    assert (await bot.get_updates(offset=-2))[0].update_id == private.update_id
    assert await bot.get_updates(offset=updates[-1].update_id + 1) == []
    assert fake.pending_updates == []
    fake.set_bot_status(group, "administrator", {"can_pin_messages"})
    assert fake.user_says(group, alice, "hello again").update_id is not None  # admins see all


async def test_a_long_poll_ends_on_an_update_or_by_the_clock(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await fake.wait_for(lambda: fake.waiting_polls == 1)
    injected = fake.command(dm, alice, "/count status bessemer")
    (update,) = await poll
    assert update.update_id == injected.update_id

    idle = asyncio.create_task(bot.get_updates(offset=update.update_id + 1, timeout=30))
    await fake.wait_for(lambda: fake.waiting_polls == 1)
    clock.advance(30)
    async with asyncio.timeout(5):  # ended by the injected clock, not 30 real seconds
        assert await idle == []


async def test_a_second_poller_ends_the_first_with_409(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    from aiogram.exceptions import TelegramConflictError

    first = asyncio.create_task(bot.get_updates(timeout=30))
    await fake.wait_for(lambda: fake.waiting_polls == 1)
    second = asyncio.create_task(bot.get_updates(timeout=30))
    with pytest.raises(TelegramConflictError, match="terminated by other getUpdates request"):
        await first
    clock.advance(30)
    async with asyncio.timeout(5):
        assert await second == []
    assert [r.status for r in fake.calls_to("getUpdates")] == [409, 200]


async def test_updates_are_kept_for_24_hours(
    fake: FakeTelegram, bot: Bot, clock: FakeClock
) -> None:
    alice = fake.add_user("Alice")
    fake.command(fake.private_chat(alice), alice, "/count")
    clock.advance(24 * 3600 + 1)
    assert await bot.get_updates() == []


async def test_aiogram_polling_answers_an_injected_command(fake: FakeTelegram, bot: Bot) -> None:
    alice = fake.add_user("Alice", "alice")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    dp = count_dispatcher()
    polling = asyncio.create_task(
        dp.start_polling(bot, handle_signals=False, close_bot_session=False, polling_timeout=30)
    )
    try:
        await fake.wait_for(lambda: fake.waiting_polls == 1)
        fake.command(group, alice, "/count status bessemer")
        await fake.wait_for(lambda: len(fake.visible(group)) == 2)
    finally:
        await dp.stop_polling()
        await polling
    assert fake.visible(group)[1].text == "count: status bessemer"
    assert fake.calls_to("getUpdates")[0].args["allowed_updates"] == ["message"]


async def test_a_webhook_gets_updates_with_the_secret_token(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.exceptions import TelegramConflictError
    from aiogram.webhook.aiohttp_server import SimpleRequestHandler

    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    app = web.Application()
    SimpleRequestHandler(count_dispatcher(), bot, secret_token="s3cret").register(app, path="/tg")
    runner, url = await serve(app)
    try:
        assert await bot.set_webhook(url, secret_token="s3cret", allowed_updates=["message"])
        with pytest.raises(TelegramConflictError, match="webhook is active"):
            await bot.get_updates()
        injected = fake.command(dm, alice, "/count final")
        await fake.wait_for(lambda: len(fake.visible(dm)) == 2)
        info = await bot.get_webhook_info()
    finally:
        await runner.cleanup()
    (delivery,) = fake.deliveries
    assert (delivery.ok, delivery.secret_token, delivery.url) == (True, "s3cret", url)
    assert delivery.body["update_id"] == injected.update_id
    assert fake.visible(dm)[1].text == "count: final"
    assert (info.url, info.pending_update_count, info.allowed_updates) == (url, 0, ["message"])
    assert SECRET_HEADER == "X-Telegram-Bot-Api-Secret-Token"


async def test_a_refused_delivery_stays_queued(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram.webhook.aiohttp_server import SimpleRequestHandler

    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    app = web.Application()
    SimpleRequestHandler(count_dispatcher(), bot, secret_token="right").register(app, path="/tg")
    runner, url = await serve(app)
    try:
        await bot.set_webhook(url, secret_token="wrong")
        fake.command(dm, alice, "/count status")
        await fake.wait_for(lambda: len(fake.deliveries) == 1)
        info = await bot.get_webhook_info()
        await bot.set_webhook(url, secret_token="right")  # the fix; delivery resumes
        await fake.wait_for(lambda: len(fake.visible(dm)) == 2)
    finally:
        await runner.cleanup()
    refused, delivered = fake.deliveries
    assert (refused.status, delivered.status) == (401, 200)
    assert info.pending_update_count == 1
    assert info.last_error_message == "Wrong response from the webhook: 401 Unauthorized"


async def test_a_method_in_the_webhook_answer_is_carried_out(fake: FakeTelegram, bot: Bot) -> None:
    from aiogram import Dispatcher
    from aiogram.webhook.aiohttp_server import SimpleRequestHandler

    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)

    async def reply_in_answer(message: Message) -> SendMessage:
        return message.answer("answered in the webhook reply")

    dp = Dispatcher()
    dp.message.register(reply_in_answer)
    app = web.Application()
    SimpleRequestHandler(dp, bot, handle_in_background=False).register(app, path="/tg")
    runner, url = await serve(app)
    try:
        await bot.set_webhook(url)
        fake.user_says(dm, alice, "hi")
        await fake.wait_for(lambda: len(fake.visible(dm)) == 2)
    finally:
        await runner.cleanup()
    reply = fake.calls_to("sendMessage")[0]
    assert (reply.http_verb, reply.ok, reply.chat_id) == ("WEBHOOK-REPLY", True, dm.id)
    assert fake.visible(dm)[1].text == "answered in the webhook reply"


async def test_set_webhook_checks_its_arguments(clock: FakeClock) -> None:
    from aiogram.exceptions import TelegramBadRequest

    async with FakeTelegram(clock=clock.monotonic, webhook_requires_https=True) as fake:
        alice = fake.add_user("Alice")
        fake.command(fake.private_chat(alice), alice, "/count")
        async with aiogram_bot(fake) as bot:
            with pytest.raises(TelegramBadRequest, match="An HTTPS URL must be provided"):
                await bot.set_webhook("http://127.0.0.1:9/tg")
            with pytest.raises(TelegramBadRequest, match="secret token contains unallowed"):
                await bot.set_webhook("https://127.0.0.1:9/tg", secret_token="not ok!")
            assert await bot.delete_webhook(drop_pending_updates=True)
        assert fake.pending_updates == []
        assert fake.webhook is None
        assert fake.requests[-1].response["description"] == "Webhook is already deleted"


async def test_with_privacy_mode_a_bare_command_goes_to_the_last_bot_that_spoke(
    fake: FakeTelegram, bot: Bot
) -> None:
    """Telegram: a bot in privacy mode gets "general commands (/start) if the bot was the last
    bot to send a message to the group"; ``/cmd@its_name`` always."""
    alice, other = fake.add_user("Alice", "alice"), fake.add_user("Poll", "pollbot", is_bot=True)
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    fake.add_member(group, other)
    assert fake.command(group, alice, "/count status").update_id is not None  # no bot spoke yet
    fake.user_says(group, other, "New poll: lunch?")  # another bot spoke last
    assert fake.command(group, alice, "/count status").update_id is None
    assert fake.command(group, alice, "/count@TallyBot status").update_id is not None
    await bot.send_message(group.id, "ours")  # this bot spoke last again
    assert fake.command(group, alice, "/count status").update_id is not None
