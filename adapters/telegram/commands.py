"""``/count`` on Telegram: updates in, the core's ``Request`` out, the ``Reply`` shown.

A command is a message (or a channel post) whose first entity is a ``bot_command`` at offset
0: ``/count status bessemer-2021``, or ``/count@tallybot ...`` in groups, where
``/count@otherbot`` is for another bot and ignored. What follows the command is the core's
command text. In groups with privacy mode on Telegram only delivers such commands anyway.

Who is an admin: the plugin's ``admin_policy`` decides, and denies by default: a user listed
in ``admin_users`` anywhere, or someone Telegram calls an admin (``getChatMember``: creator or
administrator; or an anonymous group admin; or a channel's post, which only its admins can
write) *inside a chat the operator lists* in ``admin_chats``. Authority stops at the edge of
those chats: an admin of any other group is nobody here. ``getChatMember`` is asked only for
admin commands from listed chats, cached briefly, and fails closed.

Replies go to the chat the command came from, an error in reply to the command message itself;
a private reply from a group goes to the member's private chat, or the group gets one short
notice instead (``adapters.telegram.private``). ``/start`` in a private chat is answered with
what the bot does; in one's private chat a person administers their own counts (``create``).
Each reply is sent through the adapter's replies (``bot.delivery.replies``) on the ``reply``
route: paced with the chat's posts, ahead of them, a 429 waited out. One member's commands in
one chat are carried out in the order they arrived (``bot.commands.inflight.InOrder``). A
reply's id is noted in the ledger (``Ledger.note_other``) so that the exactly-once repair
never mistakes it for a copy of a delivery.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass
from datetime import UTC

from aiogram import Bot
from aiogram.types import BotCommand, BufferedInputFile, Message, ReplyParameters, Update
from cachetools import TTLCache

from bot.platform import (
    BUSY,
    VERBS,
    AdminPolicy,
    Asker,
    Backlog,
    ChannelRef,
    DeliveryError,
    InOrder,
    PermanentDeliveryError,
    Platform,
    Replies,
    Reply,
    Request,
    Verbs,
    Verdict,
    Zone,
    guarded,
    pasted,
)

from .errors import FAILURES, translate
from .inbox import TelegramInbox
from .limits import REPLY, route
from .names import TelegramNames, named_in
from .once import Ledger
from .private import PrivateReplies
from .render import CAPTION_LIMIT, render_reply
from .send import NO_PREVIEW
from .settings import TelegramSettings

log = logging.getLogger("tallybot.telegram")

COMMAND = "count"
COMMAND_SUMMARY = "Vote counts: /count help, /count status <count>"
Handler = Callable[[Request], Awaitable[Reply]]
Monotonic = Callable[[], float]
WELCOME = (
    "tallybot posts live vote counts. Type /count help to see what it can do, and "
    "/count status to see a count. Answers meant for you alone, to commands you type in a "
    "group, come here."
)
"""The answer to ``/start`` in a private chat."""
_PASTED_COMMAND = re.compile(r"/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?(?=\s|$)")
"""A command as Telegram finds one at the start of a message (``/name`` or ``/name@bot``)."""
ADMIN_LOOKUPS_KEPT = 4096
"""getChatMember answers remembered (per chat and user, each for ``admin_cache_seconds``)."""


@dataclass(frozen=True, slots=True)
class Incoming:
    """A ``/count`` command as Telegram delivered it."""

    chat_id: int
    chat_type: str
    """"private", "group", "supergroup" or "channel"."""
    message_id: int
    user_id: int | None
    """None for a channel post or an anonymous group admin (they speak as the chat)."""
    user_name: str
    text: str
    """What follows ``/count`` (``status bessemer-2021``)."""
    as_chat: bool = False
    """Sent as the chat itself: a channel post, or an anonymous admin of the group."""
    names: tuple[tuple[str, str], ...] = ()
    """The users the update carries, by id, with their names (``adapters.telegram.names``)."""


PLACE_NOUNS = (("this server or workspace", "this chat"), ("server or workspace", "chat"))
"""The table's summaries speak of Discord's servers and Slack's workspaces; Telegram has chats."""


@dataclass(frozen=True, slots=True)
class Menu:
    """The command menu (``setMyCommands``): what every member sees (the default scope), and
    what the chats' administrators see instead (``BotCommandScopeAllChatAdministrators``)."""

    members: tuple[BotCommand, ...]
    admins: tuple[BotCommand, ...]


def worded(summary: str) -> str:
    """A verb's summary in Telegram's nouns (a chat, not a server or workspace)."""
    for theirs, ours in PLACE_NOUNS:
        summary = summary.replace(theirs, ours)
    return summary


def menu(verbs: Verbs) -> Menu:
    """``/count``, and each verb as a command of its own, described by its summary: the admin
    verbs only in the administrators' menu."""
    count = BotCommand(command=COMMAND, description=COMMAND_SUMMARY)
    every = [
        (spec.admin is not None, BotCommand(command=spec.name, description=worded(spec.summary)))
        for spec in verbs
    ]
    return Menu(
        members=(count, *(c for admin, c in every if not admin)),
        admins=(count, *(c for _, c in every)),
    )


def command_text(message: Message, bot_username: str, verbs: Container[str] = ()) -> str | None:
    """The command text of ``/count ...`` (what follows it) or of ``/<verb> ...`` (the verb and
    what follows), also written ``/count@bot_username``; None when the message is no command
    for this bot."""
    text = message.text or ""
    entities = message.entities or []
    first = entities[0] if entities else None
    if first is None or first.type != "bot_command" or first.offset != 0:
        # A copy of the bot's own words: "/count ..." with the word joiner after "/" that keeps
        # Telegram from finding a command in them (render.py). Telegram delivers it where it
        # delivers every message (a private chat, a reply to the bot, the bot an admin).
        found = _PASTED_COMMAND.match(pasted(text)) if text != pasted(text) else None
        if found is None:
            return None
        text = pasted(text)
        head = found.group()
    else:
        head = text.encode("utf-16-le")[: 2 * first.length].decode("utf-16-le", "replace")
    name, _, addressee = head[1:].partition("@")
    name = name.lower()
    if addressee and addressee.lower() != bot_username.lower():
        return None
    rest = text[len(head) :].strip()
    if name == COMMAND:
        return rest
    return f"{name} {rest}".strip() if name in verbs else None


def incoming(update: Update, bot_username: str, verbs: Container[str] = ()) -> Incoming | None:
    """The command in ``update`` (a message or a channel post: ``/count ...``, or ``/<verb>
    ...`` for one of ``verbs``), or None."""
    message = update.message or update.channel_post
    if message is None:
        return None
    text = command_text(message, bot_username, verbs)
    if text is None:
        return None
    chat = message.chat
    as_chat = message.sender_chat is not None and message.sender_chat.id == chat.id
    user = None if as_chat else message.from_user
    if user is not None:
        name = user.username or " ".join(filter(None, (user.first_name, user.last_name)))
    else:
        name = chat.title or str(chat.id)
    return Incoming(
        chat_id=chat.id,
        chat_type=chat.type,
        message_id=message.message_id,
        user_id=user.id if user is not None else None,
        user_name=name,
        text=text,
        as_chat=as_chat or chat.type == "channel",
        names=tuple(named_in(message).items()),
    )


def started(message: Message) -> bool:
    """``/start`` in a private chat: the person opened the bot (Telegram's Start button)."""
    text = message.text or ""
    return message.chat.type == "private" and text.split(maxsplit=1)[:1] == ["/start"]


async def _nothing(reply: Reply) -> None:
    """A failed welcome is only logged (``guarded``)."""


class AdminCheck:
    """Whether Telegram says a user administers a chat (``getChatMember``), cached briefly."""

    def __init__(
        self, bot: Bot, *, ttl: float, monotonic: Monotonic, kept: int = ADMIN_LOOKUPS_KEPT
    ) -> None:
        self.bot = bot
        self.ttl = ttl
        self._cache: TTLCache[tuple[int, int], bool, float] = TTLCache(kept, ttl, timer=monotonic)

    async def is_admin(self, chat_id: int, user_id: int) -> bool:
        """Creator or administrator of ``chat_id``; False when Telegram cannot say."""
        cached = self._cache.get((chat_id, user_id))
        if cached is not None:
            return cached
        try:
            member = await self.bot.get_chat_member(chat_id, user_id)
        except FAILURES as exc:
            log.warning("telegram getChatMember %s in %s failed: %s", user_id, chat_id, exc)
            return False
        admin = member.status in ("creator", "administrator")
        self._cache[(chat_id, user_id)] = admin
        return admin


class TelegramAdmins(AdminPolicy):
    """The plugin's admin rule (deny by default, see the module docstring)."""

    def __init__(self, settings: TelegramSettings) -> None:
        self.settings = settings

    def verdict(self, asker: Asker) -> Verdict:
        listed = asker.user_id.isdigit() and int(asker.user_id) in self.settings.admin_users
        chat = asker.workspace.lstrip("-")
        home = chat.isdigit() and int(asker.workspace) in self.settings.admin_chats
        tenant = asker.platform_admin
        if listed or (home and asker.platform_admin):
            return Verdict(True, tenant_admin=tenant, home=home)
        if asker.platform_admin:
            return Verdict(
                False,
                "refused: Telegram admins count only in the chats listed in [telegram] "
                f"admin_chats, and {asker.workspace} is not one",
                tenant_admin=True,
            )
        return Verdict(home=home)


def admin_policy(settings: TelegramSettings) -> AdminPolicy:
    """The plugin's admin policy (``bot.platform.Plugin.admins``)."""
    return TelegramAdmins(settings)


def channel_of(chat_id: int, platform: Platform) -> ChannelRef:
    """A chat as the core names channels: the chat is its own workspace."""
    return ChannelRef(platform, str(chat_id), str(chat_id))


class TelegramCommands:
    """Answers ``/count``: ``handle_update`` is what polling or the webhook calls."""

    def __init__(
        self,
        bot: Bot,
        handle: Handler,
        settings: TelegramSettings,
        ledger: Ledger,
        *,
        platform: Platform,
        bot_username: str,
        admins: AdminCheck,
        private: PrivateReplies,
        zone: Zone = UTC,
        verbs: Verbs = VERBS,
        replies: Replies | None = None,
        backlog: Backlog | None = None,
    ) -> None:
        """``backlog``: the app's commands under way (``Context.backlog``; its own if none)."""
        self.private = private
        self.bot = bot
        self.replies = replies if replies is not None else Replies()
        self.order = InOrder(backlog)
        self.handle = handle
        self.settings = settings
        self.ledger = ledger
        self.platform = platform
        self.bot_username = bot_username
        self.admins = admins
        self.zone = zone
        self.verbs = verbs

    async def request(self, got: Incoming) -> Request:
        """The core's request for ``got``, with Telegram's word on admin status where it counts."""
        admin = False
        if self.verbs.needs_admin(got.text):
            if got.chat_type == "private":
                admin = True  # a private chat is its one member's own place
            elif got.as_chat:
                admin = True  # only a chat's admins can post as the chat
            elif got.user_id is not None:  # a configured admin may be this chat's too
                admin = await self.admins.is_admin(got.chat_id, got.user_id)
        user = str(got.user_id) if got.user_id is not None else f"chat{got.chat_id}"
        channel = channel_of(got.chat_id, self.platform)
        verdict = admin_policy(self.settings).verdict(Asker(user, channel.workspace, admin))
        return Request(
            channel,
            user_id=user,
            user_name=got.user_name,
            text=got.text,
            admin=verdict.admin,
            refusal=verdict.refusal,
            place="chat",
            tenant_admin=verdict.tenant_admin,
            home=verdict.home,
            private_replies=not got.as_chat,  # their private chat, never the group (private.py)
            names=TelegramNames(self.bot, got.chat_id, got.names),
            inbox=TelegramInbox(
                self.bot,
                self.replies,
                self.private,
                self.bot_username,
                user_id=None if got.as_chat else got.user_id,
                chat_type=got.chat_type,
            ),
        )

    async def handle_update(self, update: Update) -> None:
        """Answer the update's ``/count`` (if it holds one); never raises for one update."""
        got = incoming(update, self.bot_username, self.verbs)
        if got is None:
            if update.message is not None and started(update.message):
                self.private.started(update.message.chat.id)
                await guarded("telegram /start", self._welcome(update.message), _nothing)
            return

        async def failed(reply: Reply) -> None:
            await self.answer(got, reply)

        if not await self.order.admit(got.chat_id):  # more than could be finished in time
            await guarded("telegram busy answer", self.show(got, BUSY), failed)
            return
        async with self.order.place((got.chat_id, got.user_id), got.chat_id):  # before any await
            await guarded(f"telegram /count {got.text[:200]!r}", self._answer(got), failed)

    async def _answer(self, got: Incoming) -> None:
        reply = await self.handle(await self.request(got))
        try:
            await self.answer(got, reply)
        except DeliveryError as exc:
            log.warning("telegram: could not answer /count in %s: %s", got.chat_id, exc)

    async def _welcome(self, message: Message) -> None:
        await self.bot.send_message(message.chat.id, WELCOME, link_preview_options=NO_PREVIEW)

    async def answer(self, got: Incoming, reply: Reply) -> None:
        """Show ``reply`` where it belongs: in the chat, or privately (``private``)."""
        asker = None if got.as_chat else got.user_id
        where = self.private.first(got.chat_id, got.chat_type, asker, reply)
        if where is not None and where.private:
            try:
                await self.show(got, where.reply, to=where.chat_id)
                return
            except PermanentDeliveryError:  # never started the bot, or blocked it
                self.private.unreachable(where.chat_id)
            where = self.private.fallback(got.chat_id, asker, reply)
        if where is not None:
            await self.show(got, where.reply, to=where.chat_id)

    async def show(self, got: Incoming, reply: Reply, *, to: int | None = None) -> None:
        """Post ``reply`` in the command's chat (an error as a reply to the command), or in
        the chat ``to``."""
        chat = got.chat_id if to is None else to
        answer_to = None if reply.ok or chat != got.chat_id else ReplyParameters(
            message_id=got.message_id, allow_sending_without_reply=True
        )  # fmt: skip
        where = f"telegram reply in {chat}"
        attachment = reply.attachment if reply.ok else None

        async def send() -> Message:
            try:
                if attachment is not None:
                    text = render_reply(reply, self.zone, limit=CAPTION_LIMIT)
                    return await self.bot.send_photo(
                        chat,
                        BufferedInputFile(attachment.data, attachment.filename),
                        caption=text.html,
                        parse_mode=text.parse_mode,
                    )
                text = render_reply(reply, self.zone)
                return await self.bot.send_message(
                    chat,
                    text.html,
                    parse_mode=text.parse_mode,
                    link_preview_options=NO_PREVIEW,
                    reply_parameters=answer_to,
                )
            except FAILURES as exc:
                raise translate(exc, where) from exc

        sent = await self.replies.send(route(REPLY, chat), send)
        await self.ledger.note_other(chat, sent.message_id)
