"""The Telegram adapter: the internals of ``adapters.telegram`` behind the core's ``Adapter``.

Delivery. ``post`` renders the message (HTML, ``render``) and sends it through
``TelegramSender`` by way of ``once.post_once``, which writes the ledger around every send (a
doubt before the request, the copy after its answer): a post whose answer was lost
(``MaybeSent``) is repaired at once (sent again silently, the ids above the doubt's floor
probed, one notified copy kept, every other deleted), and so is one that a crash left in
doubt, whatever the crash interrupted. A chart goes out as a photo (``sendPhoto``) with the
message as its caption (1,024 characters at most). Telegram has no history a bot can read, so
``find_posted`` confirms only what this process posted itself; the courier asks it about every
delivery an earlier attempt may have posted (``dedup_window`` is 0: Telegram drops no repeat),
and ``post`` then goes by the ledger. ``edit`` treats "message is not modified" as done and a
message that is gone as ``MessageGone``.

The ledger (``once.Ledger``: per chat the bot's messages, which delivery each carries, and the
sends whose answer is missing) is kept in the store (``once.StoreLedger`` on
``Context.sent_ledger``), so a repair after a restart knows exactly what is whose. Without a
store (tests) it is kept in memory (``once.MemoryLedger``): a restart forgets it, so a post the
courier says is in doubt is then probed over the ``probe_window`` ids below its silent copy,
and a *possible duplicate* (``Posted.possible_duplicate``, logged) reported when no copy is
found there.

A group that becomes a supergroup (a 400 with ``migrate_to_chat_id``, ``ChannelMoved``, or
the service messages ``migrate_to_chat_id`` / ``migrate_from_chat_id``) takes its
subscriptions and pending deliveries to the new chat id (``Context.channel_moved``, audited;
the courier does the same on ``ChannelMoved``), and its ledger is forgotten (ids count anew in
the supergroup).

Lifecycle. ``async with`` (``aopen``) starts ``TelegramLifecycle`` (``getMe``, the command
menu, long polling or the webhook); its end (``aclose``) stops it. ``health()`` is the
lifecycle's; in webhook mode ``http_routes()`` is the webhook route the ops server mounts
(webhook mode without an ops server is a configuration error: nothing else would serve the
route).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection
from datetime import UTC, datetime

from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.types import Message, Update
from aiohttp import web
from cachetools import LRUCache

from bot.platform import (
    Adapter,
    Attachment,
    ChannelMoved,
    ChannelRef,
    ConfigError,
    Context,
    Earlier,
    Health,
    Pace,
    PermanentDeliveryError,
    Platform,
    Sleep,
    unpaced,
)
from bot.platform import Outgoing as Content

from .commands import AdminCheck, TelegramCommands, channel_of, menu
from .inbox import Members
from .lifecycle import TelegramLifecycle, make_bot
from .limits import TELEGRAM_LIMITS
from .once import Ledger, MemoryLedger, StoreLedger, post_once
from .private import PrivateReplies
from .render import caption, render
from .send import Outgoing, TelegramSender
from .settings import BOT_TOKEN, WEBHOOK_SECRET, TelegramSettings

log = logging.getLogger("tallybot.telegram")

PLATFORM = Platform("telegram")
KEYS_KEPT = 4096
"""Delivery keys this process remembers (``_in_doubt``, ``_posted``)."""


def chat_of(channel: ChannelRef) -> int:
    """The Telegram chat id of a channel (``telegram:CHAT/CHAT``)."""
    try:
        return int(channel.channel)
    except ValueError:
        raise PermanentDeliveryError(
            f"telegram: {channel.channel!r} is not a chat id (write telegram:CHAT_ID/CHAT_ID)"
        ) from None


class TelegramAdapter(Adapter):
    """Telegram for tallybot (see the module docstring)."""

    platform = PLATFORM
    dedup_window = 0.0

    def __init__(
        self,
        settings: TelegramSettings,
        context: Context,
        *,
        session: type[AiohttpSession] = AiohttpSession,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if settings.mode == "webhook" and not context.ops_server:
            raise ConfigError(
                "telegram: mode: webhook mode needs the ops server ([server]) to mount "
                f"{settings.webhook_path}; add a [server] table or use mode = 'polling'"
            )
        self.settings = settings
        self.context = context
        self.limits = TELEGRAM_LIMITS.with_windows(settings.limits)
        self.zone = context.zone or UTC
        secret = context.secrets.get(WEBHOOK_SECRET)
        self.bot = make_bot(context.secret(BOT_TOKEN).reveal(), settings, session=session)
        self.sender = TelegramSender(self.bot)
        self.members = Members(self.bot, context.clock.monotonic)
        """Who is still a member of a group (a DM of its private count)."""
        shared = context.sent_ledger(self.platform)
        self.ledger: Ledger = (
            MemoryLedger() if shared is None else StoreLedger(shared, settings.probe_window)
        )
        self.lifecycle = TelegramLifecycle(
            self.bot,
            settings,
            self._on_update,
            clock=context.clock,
            sleep=sleep,
            webhook_secret=secret.reveal() if secret is not None else None,
            menu=menu(context.verbs),
        )
        self.commands: TelegramCommands | None = None
        self._in_doubt: LRUCache[str, bool] = LRUCache(KEYS_KEPT)
        """Delivery keys the courier asked about (an earlier attempt may have posted them):
        what a ledger that does not outlive the process goes by (``post_once(in_doubt=)``)."""
        self._posted: LRUCache[str, Earlier] = LRUCache(KEYS_KEPT)
        """Delivery keys this process posted, with their message: a retry of one (its record
        in the store failed after the post went out) finds it here instead of posting again."""

    # ------------------------------------------------------------------ lifecycle

    async def aopen(self) -> None:
        me = await self.lifecycle.start()
        self.commands = TelegramCommands(
            self.bot,
            self.context.handle,
            self.settings,
            self.ledger,
            platform=self.platform,
            bot_username=me.username or "",
            admins=AdminCheck(
                self.bot,
                ttl=self.settings.admin_cache_seconds,
                monotonic=self.context.clock.monotonic,
            ),
            private=PrivateReplies(
                self.context.throttle,
                self.context.clock.monotonic,
                platform=self.platform,
                bot_username=me.username or "",
            ),
            zone=self.zone,
            verbs=self.context.verbs,
            replies=self.replies,
            backlog=self.context.backlog,
        )

    async def finish_commands(self) -> None:
        await self.lifecycle.finish_updates()

    async def aclose(self) -> None:
        await self.lifecycle.stop()

    async def _on_update(self, update: Update) -> None:
        message = update.message
        if message is not None and (message.migrate_to_chat_id or message.migrate_from_chat_id):
            await self._migrated(message)
        elif self.commands is not None:
            await self.commands.handle_update(update)

    async def _migrated(self, message: Message) -> None:
        """A group became a supergroup (the service message in either): its subscriptions
        follow (``Context.channel_moved``, audited), its ledger is forgotten."""
        if message.migrate_to_chat_id:
            old, new = message.chat.id, message.migrate_to_chat_id
        else:
            old, new = message.migrate_from_chat_id or 0, message.chat.id
        why = f"the Telegram group {old} became the supergroup {new}"
        moved = await self.context.channel_moved(
            channel_of(old, self.platform), channel_of(new, self.platform), why
        )
        await self.ledger.forget(old)
        if moved:
            log.warning("%s: %d subscription(s) moved there", why, moved)

    async def health(self) -> Health:
        now = self.lifecycle.health()
        return Health() if now.ok else Health.down(f"telegram: {now.detail}")

    def http_routes(self) -> list[web.RouteDef]:
        return self.lifecycle.http_routes()

    # ------------------------------------------------------------------ delivery

    def _outgoing(self, content: Content, attachment: Attachment | None) -> Outgoing:
        if attachment is not None:
            return Outgoing(caption(content, self.zone), attachment)
        return Outgoing(render(content, self.zone))

    async def post(
        self,
        channel: ChannelRef,
        content: Content,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        if earlier is not None:  # never from find_posted; kept for the contract
            return earlier.message_id
        chat = chat_of(channel)
        if channel.member is not None:  # a DM of the group's own private count: still in it?
            await self.members.check(channel, pace)
        out = self._outgoing(content, attachment)
        try:
            posted = await post_once(
                self.sender,
                self.ledger,
                chat,
                out,
                key,
                in_doubt=self._in_doubt.get(key, False),
                pace=pace,
                window=self.settings.probe_window,
            )
        except ChannelMoved:
            await self.ledger.forget(chat)  # its ids mean nothing in the supergroup
            raise
        if posted.possible_duplicate:
            log.warning(
                "telegram post %s to %s: a duplicate may remain (probed %d ids)",
                key, chat, posted.probes,
            )  # fmt: skip
        return self._done(key, posted.message_id, attachment)

    def _done(self, key: str, message_id: int, attachment: Attachment | None) -> str:
        """``key`` is posted as ``message_id`` (a photo with its caption, with a chart)."""
        self._in_doubt.pop(key, None)
        self._posted[key] = Earlier(str(message_id), with_attachment=attachment is not None)
        return str(message_id)

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Content, *, pace: Pace = unpaced
    ) -> None:
        try:
            target = int(message_id)
        except ValueError:
            raise PermanentDeliveryError(f"telegram: {message_id!r} is no message id") from None
        chat = chat_of(channel)
        try:
            await self.sender.edit(chat, target, self._outgoing(content, None), pace=pace)
        except ChannelMoved:
            await self.ledger.forget(chat)
            raise

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """deleteMessage (a rehearsal's message); refused by Telegram (older than 48 hours, no
        right to), a :class:`PermanentDeliveryError`."""
        try:
            target = int(message_id)
        except ValueError:
            raise PermanentDeliveryError(f"telegram: {message_id!r} is no message id") from None
        if not await self.sender.delete(chat_of(channel), target, pace=pace):
            raise PermanentDeliveryError(f"telegram: Telegram will not delete {message_id}")

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        """What this process posted itself; nothing else can be confirmed (a bot cannot read a
        chat's history): the other keys asked about are noted as in doubt, for a ledger that
        forgets on restart (the store's knows)."""
        found = {key: self._posted[key] for key in keys if key in self._posted}
        for key in set(keys) - set(found):
            self._in_doubt[key] = True
        return found
