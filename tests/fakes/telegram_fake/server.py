"""FakeTelegram: a local Telegram Bot API on 127.0.0.1 for the real client library."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.loopback.server import LoopbackServer

from . import markup, payloads
from .api import Api
from .core import CallbackQuery, Core
from .limits import FloodLimits
from .records import RateLimitHit, RecordedRequest, WebhookDelivery
from .updates import Updates, Webhook
from .world import ADMIN_RIGHTS, ANONYMOUS_ADMIN_ID, JSON, Chat, Status, StoredMessage, User

DEFAULT_TOKEN = "7000000001:AAFakeTelegramTokenForLoopbackTests"
CHANNEL_BOT_RIGHTS = frozenset(
    {"can_manage_chat", "can_post_messages", "can_edit_messages", "can_delete_messages"}
)
GROUP_BOT_RIGHTS = ADMIN_RIGHTS - {"can_post_messages", "can_edit_messages"}


@dataclass(frozen=True)
class Injected:
    """A message a test put into a chat, and the update it made (None: the bot didn't get it)."""

    message: StoredMessage
    update_id: int | None


class FakeTelegram(LoopbackServer):
    """A strict local Telegram Bot API (``/bot<token>/<method>``) on a free loopback port.

    Use ``async with FakeTelegram() as fake:`` and point the client at ``fake.base_url``
    (aiogram: ``AiohttpSession(api=TelegramAPIServer.from_base(fake.base_url))``). Build the
    world with ``add_user``/``private_chat``/``add_group``/``add_channel``, inject what
    users do with ``user_says``/``command``/``channel_post``/``press_button`` (delivered by
    getUpdates or the webhook), then read ``requests``, ``messages(chat)``, ``rate_limited``
    and ``deliveries``. Everything the fake times (flood control, the 48 h delete window,
    callback answers, update retention, long-poll deadlines, message dates) reads ``clock``.
    A bug inside the fake answers 500 and is raised again when the ``async with`` exits.
    """

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        bot_username: str = "tallybot",
        clock: Callable[[], float] | None = None,
        limits: FloodLimits | None = None,
        privacy_mode: bool = True,
        webhook_requires_https: bool = False,
    ) -> None:
        bot = User(int(token.split(":", 1)[0]), "Tallybot", bot_username, is_bot=True)
        self.token = token
        self._core = Core(bot=bot, clock=clock, limits=limits or FloodLimits(),
                          privacy_mode=privacy_mode)  # fmt: skip
        self._updates = Updates(
            self._core, own_url=lambda: self.base_url, require_https=webhook_requires_https
        )
        self._api = Api(self._core, self._updates, token)
        self.hangs = self._api.hangs  # a chat whose requests hang (tests.fakes.loopback.hangs)
        self._query_ids = itertools.count(4_000_000_000_001)

    # ------------------------------------------------------------ lifecycle

    def application(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/bot{token}/{method}", self._api.handle)
        app.router.add_post("/webhook-reply", self._api.handle_webhook_reply)
        return app

    async def stopping(self) -> None:
        await self._updates.close()

    def check(self, exc: BaseException | None) -> None:
        if self._core.bugs and exc is None:
            raise self._core.bugs[0]

    @property
    def base_url(self) -> str:
        """ "http://127.0.0.1:PORT": the API is under /bot<token>/<method>."""
        if self._port is None:
            raise RuntimeError("FakeTelegram is not running: use `async with FakeTelegram()`")
        return f"http://127.0.0.1:{self._port}"

    @property
    def clock(self) -> Callable[[], float]:
        return self._core.clock

    @property
    def bot(self) -> User:
        return self._core.bot

    # ------------------------------------------------------------ the world

    def add_user(
        self, first_name: str, username: str | None = None, *, is_bot: bool = False
    ) -> User:
        """A user (``is_bot``: another bot, which may be a member of a group and speak there)."""
        return self._core.world.add_user(first_name, username, is_bot)

    def private_chat(self, user: User, *, started: bool = True) -> Chat:
        """The user's private chat with the bot (``started=False``: never pressed Start)."""
        chat = self._core.world.add_private(user)
        chat.started = started
        return chat

    def add_group(
        self,
        title: str,
        *,
        supergroup: bool = True,
        username: str | None = None,
        bot: Status = "member",
        bot_rights: Iterable[str] | None = None,
        owner: User | None = None,
    ) -> Chat:
        """A (super)group with an owner (made up unless given) and the bot as ``bot``."""
        chat = self._core.world.add_chat("supergroup" if supergroup else "group", title, username)
        chat.members[(owner or self.add_user(f"{title} owner")).id] = "creator"
        rights = GROUP_BOT_RIGHTS if bot_rights is None else bot_rights
        self._set_bot(chat, bot, rights)
        return chat

    def add_channel(
        self, title: str, *, username: str | None = None, bot_rights: Iterable[str] | None = None
    ) -> Chat:
        """A channel with the bot as an administrator (bots can't be plain channel members)."""
        chat = self._core.world.add_chat("channel", title, username)
        chat.members[self.add_user(f"{title} owner").id] = "creator"
        self._set_bot(
            chat, "administrator", CHANNEL_BOT_RIGHTS if bot_rights is None else bot_rights
        )
        return chat

    def add_member(
        self, chat: Chat, user: User, status: Status = "member", rights: Iterable[str] = ()
    ) -> None:
        """Put a user in a chat (or change their status: "administrator", "kicked", ...)."""
        chat.members[user.id] = status
        chat.rights[user.id] = frozenset(rights)
        self._core.notifier.notify()

    def set_bot_status(self, chat: Chat, status: Status, rights: Iterable[str] = ()) -> None:
        """Kick, remove, restrict or promote the bot; the bot gets a my_chat_member update."""
        old = payloads.member(chat, self.bot, self._core.world.bot_status(chat))
        self._set_bot(chat, status, rights)
        new = payloads.member(chat, self.bot, status)
        owner = next(u for u, s in chat.members.items() if s == "creator")
        self._updates.push(
            "my_chat_member",
            {
                "chat": payloads.chat(chat, self._core.world),
                "from": payloads.user(self._core.world.users[owner]),
                "date": self._core.unix_now(),
                "old_chat_member": old,
                "new_chat_member": new,
            },
        )

    def _set_bot(self, chat: Chat, status: Status, rights: Iterable[str]) -> None:
        chat.members[self.bot.id] = status
        chat.rights[self.bot.id] = frozenset(rights) if status == "administrator" else frozenset()
        self._core.notifier.notify()

    def block_bot(self, user: User, blocked: bool = True) -> None:
        """The user blocks (or unblocks) the bot: sends to their private chat answer 403."""
        self.private_chat(user).blocked = blocked

    def migrate_to_supergroup(self, chat: Chat, *, notify: bool = True) -> Chat:
        """Upgrade a basic group (as its owner does): the old id answers 400 with
        migrate_to_chat_id from now on, and the bot gets the two service messages Telegram
        sends, ``migrate_to_chat_id`` in the old group and ``migrate_from_chat_id`` in the new
        supergroup (``notify=False``: the updates are lost, only the 400 tells)."""
        if chat.type != "group":
            raise ValueError("only a basic group can be upgraded")
        new = self._core.world.add_chat("supergroup", chat.title, chat.username)
        new.members, new.rights = dict(chat.members), dict(chat.rights)
        owner = next(u for u, s in chat.members.items() if s == "creator")
        old_side = self._core.store(chat, owner, "service", migrate_to_chat_id=new.id)
        new_side = self._core.store(new, owner, "service", migrate_from_chat_id=chat.id)
        chat.migrated_to = new.id
        if notify:
            for message in (old_side, new_side):
                self._updates.push("message", payloads.message(message, self._core.world))
        return new

    # ------------------------------------------------------------ what users do

    def user_says(
        self,
        chat: Chat,
        user: User,
        text: str,
        *,
        anonymous: bool = False,
        reply_to: StoredMessage | None = None,
    ) -> Injected:
        """A user's message (entities as Telegram finds them); an update if the bot may see it.

        ``anonymous``: sent by an anonymous admin, so it comes from GroupAnonymousBot on
        behalf of the chat. In groups with privacy mode on, the bot only gets commands (not
        those addressed to another bot; one without ``@botname`` only while the bot is the
        last bot that spoke there), and replies to its own messages, unless it is an administrator.
        ``user`` may be another bot; ``reply_to``: the message (of that chat) it answers.
        """
        if chat.type == "channel":
            raise ValueError("users don't write in channels: use channel_post")
        in_chat = chat.type == "private" or chat.members.get(user.id) in (
            "creator", "administrator", "member", "restricted",
        )  # fmt: skip
        if not in_chat:
            raise ValueError(f"{user.first_name} is not in {chat.title or chat.id}")
        entities = markup.detect(text, [])
        if reply_to is not None and reply_to.chat_id != chat.id:
            raise ValueError("a reply answers a message of the same chat")
        message = self._core.store(
            chat, user.id, "user", text=text, entities=entities, anonymous=anonymous,
            reply_to=None if reply_to is None else reply_to.message_id,
        )  # fmt: skip
        update_id = None
        to_the_bot = reply_to is not None and reply_to.sender_id == self.bot.id
        if self._bot_sees(chat, text, entities, reply=to_the_bot):
            update_id = self._updates.push("message", payloads.message(message, self._core.world))
        return Injected(message, update_id)

    def command(self, chat: Chat, user: User, text: str, *, anonymous: bool = False) -> Injected:
        """``user_says`` for a command such as "/count status bessemer" (bot_command entity)."""
        if not text.startswith("/"):
            raise ValueError("a command starts with '/'")
        return self.user_says(chat, user, text, anonymous=anonymous)

    def channel_post(self, chat: Chat, text: str) -> Injected:
        """A post by the channel's admins (no `from`; sender_chat is the channel)."""
        if chat.type != "channel":
            raise ValueError("channel_post needs a channel")
        entities = markup.detect(text, [])
        message = self._core.store(chat, None, "channel_post", text=text, entities=entities)
        payload = payloads.message(message, self._core.world)
        return Injected(message, self._updates.push("channel_post", payload))

    def press_button(self, message: StoredMessage, user: User, data: str) -> str:
        """The user presses the inline button carrying ``data``; returns the query id."""
        rows = (message.reply_markup or {}).get("inline_keyboard", [])
        if not any(b.get("callback_data") == data for row in rows for b in row):
            raise ValueError(f"no button with callback_data {data!r} on that message")
        query_id = str(next(self._query_ids))
        self._core.callback_queries[query_id] = CallbackQuery(
            query_id, user.id, data, self._core.clock()
        )
        self._updates.push(
            "callback_query",
            {
                "id": query_id,
                "from": payloads.user(user),
                "message": payloads.message(message, self._core.world),
                "chat_instance": str(abs(message.chat_id)),
                "data": data,
            },
        )
        return query_id

    def _bot_sees(
        self, chat: Chat, text: str, entities: list[JSON], *, reply: bool = False
    ) -> bool:
        """``reply``: it answers one of the bot's messages (delivered in privacy mode too)."""
        world = self._core.world
        if chat.type == "private":
            return not chat.blocked
        status = world.bot_status(chat)
        if status in ("left", "kicked"):
            return False
        if reply or not self._core.privacy_mode or status == "administrator":
            return True
        first = entities[0] if entities else None
        if first is None or first["type"] != "bot_command" or first["offset"] != 0:
            return False
        command = text[: first["length"]]
        addressee = command.partition("@")[2]
        if addressee:
            return addressee.lower() == (self.bot.username or "").lower()
        return self._last_bot_in(chat) in (None, self.bot.id)

    def _last_bot_in(self, chat: Chat) -> int | None:
        """The bot that sent the chat's latest message of a bot's: a command without
        ``@botname`` goes, with privacy mode on, only to that bot (Telegram's "general commands
        if the bot was the last bot to send a message to the group")."""
        users = self._core.world.users
        for message in reversed(chat.messages.values()):
            sender = users.get(message.sender_id) if message.sender_id is not None else None
            if sender is not None and sender.is_bot and message.sender_id != ANONYMOUS_ADMIN_ID:
                return sender.id
        return None

    # ------------------------------------------------------------ records

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request, in arrival order, with its answer (refused ones too)."""
        return list(self._core.requests)

    @property
    def accepted(self) -> list[RecordedRequest]:
        """The requests that took effect and were answered ok (or whose answer was lost)."""
        return [r for r in self._core.requests if r.ok and r.executed]

    def calls_to(self, method: str) -> list[RecordedRequest]:
        return [r for r in self._core.requests if r.method == method]

    @property
    def rate_limited(self) -> list[RateLimitHit]:
        return list(self._core.rate_limited)

    @property
    def deliveries(self) -> list[WebhookDelivery]:
        return list(self._updates.deliveries)

    @property
    def pending_updates(self) -> list[JSON]:
        return [u.body for u in self._updates.pending]

    @property
    def waiting_polls(self) -> int:
        """getUpdates calls waiting for updates right now."""
        return self._updates.waiting

    @property
    def webhook(self) -> Webhook | None:
        return self._updates.webhook

    def messages(self, chat: Chat) -> list[StoredMessage]:
        """Every message of the chat in id order, deleted ones included (flagged)."""
        return [chat.messages[k] for k in sorted(chat.messages)]

    def visible(self, chat: Chat) -> list[StoredMessage]:
        """What a member sees: the chat's live messages in order."""
        return [m for m in self.messages(chat) if not m.deleted]

    def pinned(self, chat: Chat) -> list[int]:
        return list(chat.pinned)

    def callback_answers(self, query_id: str) -> list[JSON]:
        return list(self._core.callback_queries[query_id].answers)

    def commands(
        self, scope: str = "default", chat: Chat | None = None, language: str = ""
    ) -> list[JSON]:
        key = (scope, chat.id if chat else None, None, language)
        return list(self._core.commands.get(key, []))

    # ------------------------------------------------------------ switches

    def fail_next(
        self,
        method: str,
        *,
        status: int = 500,
        description: str | None = None,
        times: int = 1,
        commit: bool = False,
        drop: bool = False,
        retry_after: int | None = None,
        chat: int | None = None,
    ) -> None:
        """The next ``times`` calls of ``method`` (about ``chat`` only, if given) fail with
        ``status``/``description``.

        ``commit``: the call takes effect first, only the answer is the failure.
        ``drop``: the connection closes with no answer at all.
        """
        self._api.fail_next(
            method, status=status, description=description, times=times,
            commit=commit, drop=drop, retry_after=retry_after,
            chat=None if chat is None else str(chat),
        )  # fmt: skip

    def lose_answer(self, method: str, *, times: int = 1, chat: int | None = None) -> None:
        """Carry out the next call(s) of ``method`` (about ``chat`` only, if given), then drop
        the connection unanswered."""
        self.fail_next(method, times=times, commit=True, drop=True, chat=chat)

    def drop_request(self, method: str, *, times: int = 1) -> None:
        """Drop the next call(s) of ``method`` unanswered *without* carrying them out."""
        self.fail_next(method, times=times, commit=False, drop=True)

    # ------------------------------------------------------------ waiting, webhooks

    def route_webhook(self, public: str, to: str) -> None:
        """Deliver to webhook URLs starting with ``public`` at ``to`` instead (a proxy's job):
        ``route_webhook("https://bot.example.org", "http://127.0.0.1:PORT")``."""
        self._updates.routes[public] = to

    async def deliver_webhook(self) -> list[WebhookDelivery]:
        """POST what is queued to the webhook now (retrying a failed delivery)."""
        return await self._updates.deliver()

    async def wait_for(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5,  # noqa: ASYNC109 - the documented API takes a timeout
    ) -> None:
        """Return once ``predicate()`` holds; re-checked whenever the fake records something."""
        await self._core.notifier.wait_for(predicate, timeout)
