"""The whole bot with Telegram in webhook mode: ``bot.runtime.app.App`` on SQLite with ``[server]``
on port 0, ``[telegram] mode = "webhook"``, the real aiogram Bot against the loopback fake.

At start the adapter sets its public https URL and secret token with setWebhook; the fake,
standing in for Telegram and for the TLS-terminating proxy in front of the bot, POSTs a
member's command to that URL, which reaches the webhook route on the ops server: the reply
comes in the chat. A delivery with a wrong or no secret token is refused with 401 (as aiogram's
``SimpleRequestHandler`` does) and nothing is answered; Telegram keeps the update queued, and
once the secret is right again it is delivered and answered, once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.telegram.plugin import PLUGIN
from adapters.telegram.settings import BOT_TOKEN, WEBHOOK_SECRET, TelegramSettings
from bot.commands.throttle import Throttle
from bot.ops import readiness
from bot.platform import Context
from bot.runtime.app import App
from bot.settings.loader import Config, parse
from bot.settings.secrets import Secret
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import aiogram_bot, loopback_session

from .conftest import shown
from .test_app import TELEGRAM, TITLE, VirtualTime, from_bot

if TYPE_CHECKING:
    from adapters.telegram.adapter import TelegramAdapter

PUBLIC = "https://bot.example.org"
PATH = "/telegram/webhook"
SECRET = "s3cret-of_the-hook"


def webhook_config(tmp_path: Path, fake: FakeTelegram) -> Config:
    table = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
        "server": {"host": "127.0.0.1", "port": 0},
        "telegram": {
            "api_base": fake.base_url,
            "mode": "webhook",
            "webhook_path": PATH,
            "webhook_url": PUBLIC + PATH,
        },
        "counts": [
            {
                "id": "bessemer-2021",
                "title": TITLE,
                "rule": "majority",
                "eligible": 5876,
                "choices": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
                "source": {"kind": "manual"},
                "public": True,  # followed from any group
            }
        ],
    }
    return parse(table, tmp_path / "tallybot.toml")


@asynccontextmanager
async def running(fake: FakeTelegram, vt: VirtualTime, cfg: Config) -> AsyncIterator[App]:
    from adapters.telegram.adapter import TelegramAdapter

    settings = cfg.settings("telegram")
    assert isinstance(settings, TelegramSettings)
    assert cfg.server is not None

    def factory(commands: Any) -> TelegramAdapter:
        context = Context(
            handle=commands.handle,
            clock=vt.clock,
            throttle=Throttle(vt.clock),
            admins=PLUGIN.admins(settings),
            place=PLUGIN.place,
            secrets={
                BOT_TOKEN: Secret(BOT_TOKEN, fake.token),
                WEBHOOK_SECRET: Secret(WEBHOOK_SECRET, SECRET),
            },
            ops_server=True,
        )
        return TelegramAdapter(settings, context, session=loopback_session(), sleep=vt.sleep)

    app = App(cfg, {TELEGRAM: factory}, clock=vt.clock, sleep=vt.sleep, poll=False)
    async with app:
        assert app.server is not None
        fake.route_webhook(PUBLIC, app.server.url)  # the proxy in front of the ops server
        yield app


async def test_commands_come_by_webhook_with_the_secret_and_are_answered(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    vt = VirtualTime(clock)
    async with FakeTelegram(clock=clock.monotonic) as fake:
        member = fake.add_user("Ada", "ada")
        group = fake.add_group("Union hall")
        fake.add_member(group, member)
        dm = fake.private_chat(member)  # the group's second answer within 5 s is private
        async with running(fake, vt, webhook_config(tmp_path, fake)) as app:
            (set_webhook,) = fake.calls_to("setWebhook")
            assert set_webhook.args["url"] == PUBLIC + PATH
            assert set_webhook.args["secret_token"] == SECRET
            assert fake.webhook is not None
            assert fake.calls_to("getUpdates") == []  # webhook mode never polls
            ready = await readiness.check(app)
            (check,) = [c for c in ready.checks if c.name == "adapter:telegram"]
            assert check.problem is None

            first = fake.command(group, member, "/count status bessemer-2021")
            await fake.wait_for(lambda: len(from_bot(fake, group)) == 1)
            (delivery,) = fake.deliveries
            assert (delivery.status, delivery.url, delivery.secret_token) == (
                200,
                PUBLIC + PATH,
                SECRET,
            )
            assert delivery.update_id == first.update_id
            (reply,) = from_bot(fake, group)
            assert TITLE in shown(reply)

            # An operator sets a wrong secret, then none: Telegram's deliveries are refused.
            async with aiogram_bot(fake) as other:
                assert await other.set_webhook(PUBLIC + PATH, secret_token="wrong-secret")
                second = fake.command(group, member, "/count status bessemer-2021")
                await fake.wait_for(lambda: len(fake.deliveries) == 2)
                assert fake.deliveries[1].status == 401
                assert await other.set_webhook(PUBLIC + PATH)  # delivers the queue again
                await fake.wait_for(lambda: len(fake.deliveries) == 3)
                refused = fake.deliveries[1:]
                assert [(d.status, d.secret_token) for d in refused] == [
                    (401, "wrong-secret"),
                    (401, None),
                ]
                assert all(d.update_id == second.update_id for d in refused)
                assert [u["update_id"] for u in fake.pending_updates] == [second.update_id]

                # The right secret again: the queued command is delivered and answered once.
                assert await other.set_webhook(PUBLIC + PATH, secret_token=SECRET)
                await fake.wait_for(lambda: len(from_bot(fake, dm)) == 1)
            assert [d.status for d in fake.deliveries] == [200, 401, 401, 200]
            assert fake.pending_updates == []
        assert len(from_bot(fake, group)) == 1  # nothing answered the refused deliveries
        assert len(fake.calls_to("sendMessage")) == 2
