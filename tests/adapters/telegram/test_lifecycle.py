"""The connection against the fake: start (getMe, the menu), long polling that stops within a
second, health, and the webhook route with its secret token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import aiohttp
import pytest
from aiohttp import web

from adapters.telegram.settings import TelegramSettings
from bot.commands.builtin import VERBS
from bot.errors import ConfigError, PermanentDeliveryError
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import loopback_session

if TYPE_CHECKING:
    from aiogram.types import Update

    from adapters.telegram.lifecycle import TelegramLifecycle

SECRET = "s3cret-token_for-tests"


def polling(fake: FakeTelegram) -> TelegramSettings:
    return TelegramSettings(api_base=fake.base_url, poll_timeout=30)


class Received:
    def __init__(self) -> None:
        self.updates: list[Update] = []

    async def __call__(self, update: Update) -> None:
        self.updates.append(update)


@pytest.fixture
def received() -> Received:
    return Received()


@pytest.fixture
async def lifecycle(
    fake: FakeTelegram, clock: FakeClock, received: Received
) -> AsyncIterator[TelegramLifecycle]:
    from adapters.telegram.lifecycle import TelegramLifecycle, make_bot

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    bot = make_bot(fake.token, polling(fake), session=loopback_session())
    life = TelegramLifecycle(bot, polling(fake), received, clock=clock, sleep=sleep)
    yield life
    await life.stop()


async def test_polling_receives_and_stops_within_a_second(
    fake: FakeTelegram, lifecycle: TelegramLifecycle, received: Received
) -> None:
    alice = fake.add_user("Alice")
    dm = fake.private_chat(alice)
    me = await lifecycle.start()
    assert me.username == "tallybot"
    members = [s.name for s in VERBS if s.admin is None]
    assert [c["command"] for c in fake.commands()] == ["count", *members]
    admins = fake.commands("all_chat_administrators")
    assert [c["command"] for c in admins] == ["count", *(s.name for s in VERBS)]
    assert {"update", "final", "create", "admins"} <= {c["command"] for c in admins} - set(members)
    words = " ".join(c["description"] for c in admins)
    assert "chat" in words
    assert "server" not in words
    assert "workspace" not in words
    assert lifecycle.health().ok
    fake.command(dm, alice, "/count status bessemer-2021")
    await fake.wait_for(lambda: len(received.updates) == 1)
    await fake.wait_for(lambda: fake.waiting_polls == 1)  # a long poll is waiting now
    async with asyncio.timeout(1.0):
        await lifecycle.stop()
    assert not lifecycle.health().ok
    assert fake.pending_updates == []  # the handled update was confirmed at stop
    first = fake.calls_to("getUpdates")[0].args
    assert (first["timeout"], first["allowed_updates"]) == (30, ["message", "channel_post"])
    assert [r.method for r in fake.requests[:4]] == [
        "getMe",
        "setMyCommands",
        "setMyCommands",
        "deleteWebhook",
    ]


async def test_health_reports_a_poll_that_gets_no_answer(
    fake: FakeTelegram, lifecycle: TelegramLifecycle
) -> None:
    await lifecycle.start()
    fake.fail_next("getUpdates", status=502, times=1000)
    await fake.wait_for(lambda: not lifecycle.health().ok)
    assert "no answer to getUpdates" in lifecycle.health().detail


async def test_a_wrong_token_fails_the_start(fake: FakeTelegram, clock: FakeClock) -> None:
    from adapters.telegram.lifecycle import TelegramLifecycle, make_bot

    bot = make_bot("7000000001:WRONG", polling(fake), session=loopback_session())
    life = TelegramLifecycle(bot, polling(fake), Received(), clock=clock)
    with pytest.raises(PermanentDeliveryError, match="TELEGRAM_BOT_TOKEN"):
        await life.start()
    await life.stop()


async def test_the_webhook_route_checks_the_secret_token(
    fake: FakeTelegram, clock: FakeClock, received: Received
) -> None:
    from adapters.telegram.lifecycle import SECRET_HEADER, TelegramLifecycle, make_bot

    app = web.Application()
    runner = web.AppRunner(app)
    # Built without the checks of the file: no URL yet, then one on loopback (not https).
    settings = TelegramSettings.model_construct(api_base=fake.base_url, mode="webhook")
    with pytest.raises(ConfigError, match="TELEGRAM_WEBHOOK_SECRET"):
        TelegramLifecycle(make_bot(fake.token, settings), settings, received, clock=clock)
    bot = make_bot(fake.token, settings, session=loopback_session())
    # The route goes on a server first, then Telegram is told its URL.
    life = TelegramLifecycle(bot, settings, received, clock=clock, webhook_secret=SECRET)
    app.add_routes(life.http_routes())
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}{settings.webhook_path}"
    life.settings = TelegramSettings.model_construct(
        api_base=fake.base_url, mode="webhook", webhook_url=url
    )
    try:
        await life.start()
        assert fake.webhook is not None
        assert fake.webhook.secret_token == SECRET
        alice = fake.add_user("Alice")
        fake.command(fake.private_chat(alice), alice, "/count status")
        (delivery,) = await fake.deliver_webhook()
        assert delivery.ok
        await fake.wait_for(lambda: len(received.updates) == 1)
        async with aiohttp.ClientSession() as http:
            body = delivery.body
            again = await http.post(url, json=body, headers={SECRET_HEADER: SECRET})
            wrong = await http.post(url, json=body, headers={SECRET_HEADER: "guess"})
            none = await http.post(url, json=body)
            junk = await http.post(url, data=b"{", headers={SECRET_HEADER: SECRET})
        assert (again.status, wrong.status, none.status, junk.status) == (200, 401, 401, 400)
        assert len(received.updates) == 1  # Telegram's repeat of an update is dropped
        assert life.health().ok
    finally:
        await life.stop()
        await runner.cleanup()
    assert TelegramLifecycle(
        make_bot(fake.token, polling(fake), session=loopback_session()),
        polling(fake), received, clock=clock,
    ).http_routes() == []  # fmt: skip


async def test_the_webhook_drops_repeats_among_the_latest_update_ids_only(
    fake: FakeTelegram, clock: FakeClock, received: Received
) -> None:
    from adapters.telegram.lifecycle import SECRET_HEADER, TelegramLifecycle, make_bot

    settings = TelegramSettings.model_construct(api_base=fake.base_url, mode="webhook")
    bot = make_bot(fake.token, settings, session=loopback_session())
    life = TelegramLifecycle(
        bot, settings, received, clock=clock, webhook_secret=SECRET, seen_updates=3
    )
    app = web.Application()
    app.add_routes(life.http_routes())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}{settings.webhook_path}"
    chat = {"id": 7, "type": "private", "first_name": "Alice"}
    try:
        async with aiohttp.ClientSession() as http:
            for update_id in (1, 2, 3, 4, 4, 2, 1):  # 1 is forgotten once 4 came: taken again
                message = {"message_id": update_id, "date": 0, "chat": chat, "text": "/count"}
                body = {"update_id": update_id, "message": message}
                answer = await http.post(url, json=body, headers={SECRET_HEADER: SECRET})
                assert answer.status == 200
        await fake.wait_for(lambda: len(received.updates) == 5)
        assert [u.update_id for u in received.updates] == [1, 2, 3, 4, 1]
    finally:
        await life.stop()
        await runner.cleanup()
