"""The Telegram connection: the aiogram ``Bot``, updates by long polling or a webhook, health.

``make_bot`` points aiogram at ``settings.api_base`` (api.telegram.org, a local Bot API
server, or a test's fake). ``TelegramLifecycle.start`` asks ``getMe`` (the token is checked
and the bot's username learnt), publishes the command menu (``setMyCommands``: the members'
verbs in the default scope, every verb for the chats' administrators), then either
deletes any webhook and starts long polling (``getUpdates`` with ``offset`` and ``timeout``,
in one asyncio task), or sets the webhook with its secret token, whose route
(``http_routes``) the ops server mounts. ``stop`` cancels the poll at once (an unconfirmed
update comes again next time: nothing is lost), lets running command handlers finish (briefly),
confirms the offset of what was handled, and closes the HTTP session.

Updates are handed to ``on_update`` one task each, so a slow command holds no other; a
failing poll is retried with a growing pause (``sleep`` is injected), and a 409 means another
instance polls with the same token (logged: only one may).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramConflictError
from aiogram.types import BotCommandScopeAllChatAdministrators, Update, User
from aiohttp import web
from cachetools import LRUCache
from pydantic import ValidationError

from bot.platform import GRACE_S, VERBS, Clock, ConfigError, InFlight, Sleep

from .commands import Menu, menu
from .errors import FAILURES, translate
from .settings import TelegramSettings

log = logging.getLogger("tallybot.telegram")

ALLOWED_UPDATES = ["message", "channel_post"]
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
MENU = menu(VERBS)
"""The command menu of the built-in verbs (the adapter publishes that of its context's)."""
SEEN_UPDATES = 1024
"""Update ids remembered to drop a webhook delivery Telegram repeats."""
OnUpdate = Callable[[Update], Awaitable[None]]


def make_bot(
    token: str, settings: TelegramSettings, *, session: type[AiohttpSession] = AiohttpSession
) -> Bot:
    """The aiogram Bot for ``token`` at ``settings.api_base``."""
    api = TelegramAPIServer.from_base(settings.api_base)
    return Bot(token, session=session(api=api))


@dataclass(frozen=True, slots=True)
class Health:
    ok: bool
    detail: str


class TelegramLifecycle:
    """Start, updates, health and stop of one bot (see the module docstring)."""

    def __init__(
        self,
        bot: Bot,
        settings: TelegramSettings,
        on_update: OnUpdate,
        *,
        clock: Clock,
        sleep: Sleep = asyncio.sleep,
        webhook_secret: str | None = None,
        finish_timeout: float = GRACE_S,
        menu: Menu = MENU,
        seen_updates: int = SEEN_UPDATES,
    ) -> None:
        if settings.mode == "webhook" and not webhook_secret:
            raise ConfigError("TELEGRAM_WEBHOOK_SECRET is not set: webhook mode needs it")
        self.bot = bot
        self.settings = settings
        self.on_update = on_update
        self.clock = clock
        self.sleep = sleep
        self.webhook_secret = webhook_secret
        self.menu = menu
        self.me: User | None = None
        self.offset: int | None = None
        self.last_poll: float | None = None
        """When getUpdates last answered (clock.monotonic)."""
        self._started: float | None = None
        self._poller: asyncio.Task[None] | None = None
        self._polled = False
        """Updates were polled for (their offset is confirmed on stopping)."""
        self._handlers = InFlight(grace=finish_timeout)
        self._seen: LRUCache[int, None] = LRUCache(seen_updates)

    # ------------------------------------------------------------------ start, stop

    async def start(self) -> User:
        """Check the token, publish the menu, start receiving updates; the bot's own user."""
        try:
            self.me = await self.bot.get_me()
            await self.bot.set_my_commands(list(self.menu.members))
            await self.bot.set_my_commands(
                list(self.menu.admins), scope=BotCommandScopeAllChatAdministrators()
            )
            if self.settings.mode == "webhook":
                assert self.settings.webhook_url is not None
                await self.bot.set_webhook(
                    self.settings.webhook_url,
                    secret_token=self.webhook_secret,
                    allowed_updates=ALLOWED_UPDATES,
                )
            else:
                await self.bot.delete_webhook()
        except FAILURES as exc:
            raise translate(exc, f"telegram start at {self.settings.api_base}") from exc
        self._started = self.clock.monotonic()
        if self.settings.mode == "polling":
            self._poller = asyncio.create_task(self._poll(), name="telegram getUpdates")
        return self.me

    async def finish_updates(self) -> None:
        """Stop polling at once and finish the handlers of the updates received (briefly)."""
        poller, self._poller = self._poller, None
        if poller is not None:
            self._polled = True
            poller.cancel()
            await asyncio.gather(poller, return_exceptions=True)
        await self._handlers.finish()

    async def stop(self) -> None:
        """Stop polling at once, finish handlers (briefly), confirm the offset, close."""
        await self.finish_updates()
        if self._polled and self.offset is not None:
            try:
                async with asyncio.timeout(1.0):
                    await self.bot.get_updates(offset=self.offset, limit=1, timeout=0)
            except (*FAILURES, TimeoutError) as exc:
                log.info("telegram: handled updates not confirmed at stop (%s)", exc)
        self._started = None
        await self.bot.session.close()

    # ------------------------------------------------------------------ polling

    async def _poll(self) -> None:
        failures = 0
        timeout = self.settings.poll_timeout
        while True:
            try:
                updates = await self.bot.get_updates(
                    offset=self.offset,
                    timeout=timeout,
                    allowed_updates=ALLOWED_UPDATES,
                    request_timeout=timeout + 15,
                )
            except TelegramConflictError as exc:
                failures += 1
                log.error("telegram: another instance polls with this token (%s)", exc.message)
                await self.sleep(min(60.0, 2.0**failures))
                continue
            except FAILURES as exc:
                failures += 1
                log.warning("telegram getUpdates failed (%d in a row): %s", failures, exc)
                await self.sleep(min(60.0, 2.0**failures))
                continue
            failures = 0
            self.last_poll = self.clock.monotonic()
            for update in updates:
                self.offset = update.update_id + 1
                self._spawn(update)

    def _spawn(self, update: Update) -> None:
        self._handlers.spawn(self._handle(update), f"telegram update {update.update_id}")

    async def _handle(self, update: Update) -> None:
        try:
            await self.on_update(update)
        except Exception:  # one update must not stop the others
            log.exception("telegram update %d failed", update.update_id)

    # ------------------------------------------------------------------ webhook

    def http_routes(self) -> list[web.RouteDef]:
        """The webhook's route in webhook mode (for the ops server); nothing when polling."""
        if self.settings.mode != "webhook":
            return []
        return [web.post(self.settings.webhook_path, self._webhook)]

    async def _webhook(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "")
        expected = self.webhook_secret or ""
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return web.Response(status=401, text="wrong secret token")
        try:
            raw: Any = json.loads(await request.read())
            update = Update.model_validate(raw, context={"bot": self.bot})
        except (ValueError, ValidationError):
            return web.Response(status=400, text="not an update")
        if not self._handlers.accepting:  # stopping: Telegram sends it again later
            return web.Response(status=503, text="stopping")
        if self._first(update.update_id):
            self._spawn(update)
        return web.Response(text="ok")

    def _first(self, update_id: int) -> bool:
        if update_id in self._seen:
            return False
        self._seen[update_id] = None
        return True

    # ------------------------------------------------------------------ health

    def health(self) -> Health:
        """Polling: the task runs and getUpdates answered within two poll timeouts (plus a
        margin); webhook: started. Not started: not healthy."""
        if self._started is None:
            return Health(False, "not started")
        if self.settings.mode == "webhook":
            return Health(True, f"webhook at {self.settings.webhook_path}")
        poller = self._poller
        if poller is None or poller.done():
            return Health(False, "the getUpdates task stopped")
        since = self.last_poll if self.last_poll is not None else self._started
        age = self.clock.monotonic() - since
        if age > 2 * self.settings.poll_timeout + 30:
            return Health(False, f"no answer to getUpdates for {age:.0f} s")
        return Health(True, "polling")
