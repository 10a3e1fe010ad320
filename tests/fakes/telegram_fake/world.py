"""The fake's world: the bot, users, chats with their members, and every chat's messages.

Message ids are allocated like Telegram's: supergroups and channels count per chat, while
private chats and basic groups share one counter per account (so a bot's ids in one private
chat have gaps where its other private chats and groups took numbers).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import ApiError, bad_request, forbidden

JSON = dict[str, Any]
ChatType = Literal["private", "group", "supergroup", "channel"]
Status = Literal["creator", "administrator", "member", "restricted", "left", "kicked"]
ADMIN_RIGHTS = frozenset(
    {
        "can_manage_chat", "can_delete_messages", "can_manage_video_chats",
        "can_restrict_members", "can_promote_members", "can_change_info", "can_invite_users",
        "can_post_stories", "can_edit_stories", "can_delete_stories", "can_post_messages",
        "can_edit_messages", "can_pin_messages", "can_manage_topics",
        "can_send_welcome_messages",
    }
)  # fmt: skip
ANONYMOUS_ADMIN_ID = 1087968824
"""GroupAnonymousBot: the `from` of messages an anonymous admin sends in a group."""


@dataclass
class User:
    id: int
    first_name: str
    username: str | None = None
    is_bot: bool = False
    language_code: str | None = None


@dataclass
class Revision:
    """A message's content before one edit."""

    text: str | None
    entities: list[JSON]
    caption: str | None
    caption_entities: list[JSON]
    reply_markup: JSON | None
    time: float


@dataclass
class StoredMessage:
    """A message in a chat, current state (edits applied, deletion flagged)."""

    chat_id: int
    message_id: int
    sender_id: int | None
    """The user (or the bot) who sent it; None for a channel post."""
    date: int
    sent_at: float
    """The fake's clock when it was sent."""
    source: str
    """"sendMessage", "sendPhoto", "user" or "channel_post"."""
    text: str | None = None
    entities: list[JSON] = field(default_factory=list)
    caption: str | None = None
    caption_entities: list[JSON] = field(default_factory=list)
    photo: list[JSON] | None = None
    photo_sha256: str | None = None
    reply_markup: JSON | None = None
    parse_mode: str | None = None
    """As sent (text/entities hold the parsed result)."""
    disable_notification: bool = False
    anonymous: bool = False
    """Sent by an anonymous group admin (on behalf of the chat)."""
    deleted: bool = False
    edit_date: int | None = None
    reply_to: int | None = None
    """The id of the message (in the same chat) this one answers."""
    migrate_to_chat_id: int | None = None
    """A service message: the group became the supergroup with this id."""
    migrate_from_chat_id: int | None = None
    """A service message: the supergroup was the group with this id."""
    revisions: list[Revision] = field(default_factory=list)

    @property
    def content(self) -> tuple[Any, ...]:
        """What "message is not modified" compares."""
        return (self.text, self.entities, self.caption, self.caption_entities, self.reply_markup)


@dataclass
class Chat:
    id: int
    type: ChatType
    title: str | None = None
    username: str | None = None
    members: dict[int, Status] = field(default_factory=dict)
    rights: dict[int, frozenset[str]] = field(default_factory=dict)
    """Administrator rights by user id (the bot's included)."""
    messages: dict[int, StoredMessage] = field(default_factory=dict)
    pinned: list[int] = field(default_factory=list)
    """Pinned message ids, the most recent last."""
    blocked: bool = False
    """Private chat: the user blocked the bot."""
    started: bool = True
    """Private chat: the user has started the bot."""
    migrated_to: int | None = None
    next_id: int = 1
    """The per-chat message counter (supergroups and channels)."""

    @property
    def is_group(self) -> bool:
        """A group, supergroup or channel (where "20 messages per minute" applies)."""
        return self.type != "private"

    def visible(self) -> list[StoredMessage]:
        return [m for m in self.messages.values() if not m.deleted]


class World:
    def __init__(self, bot: User) -> None:
        self.bot = bot
        self.users: dict[int, User] = {bot.id: bot}
        self.chats: dict[int, Chat] = {}
        self._account_box = itertools.count(1)
        self._user_ids = itertools.count(10_001)
        self._group_ids = itertools.count(700_000_001)
        self._channel_ids = itertools.count(1_001_500_000_001)

    # ------------------------------------------------------------ setup

    def add_user(self, first_name: str, username: str | None, is_bot: bool = False) -> User:
        user = User(next(self._user_ids), first_name, username, is_bot)
        self.users[user.id] = user
        return user

    def add_chat(self, type_: ChatType, title: str | None, username: str | None) -> Chat:
        chat_id = -next(self._group_ids) if type_ == "group" else -next(self._channel_ids)
        chat = Chat(chat_id, type_, title, username)
        self.chats[chat_id] = chat
        return chat

    def add_private(self, user: User) -> Chat:
        chat = self.chats.get(user.id)
        if chat is None:
            chat = Chat(user.id, "private", None, user.username, {user.id: "member"})
            self.chats[user.id] = chat
        return chat

    def next_message_id(self, chat: Chat) -> int:
        if chat.type in ("supergroup", "channel"):
            chat.next_id += 1
            return chat.next_id - 1
        return next(self._account_box)

    # ------------------------------------------------------------ lookups

    def user(self, user_id: int) -> User:
        user = self.users.get(user_id)
        if user is None:
            raise bad_request("user not found")
        return user

    def find_chat(self, ref: int | str) -> Chat:
        """By id or "@username"; "chat not found" otherwise (also for a chat the bot never saw)."""
        if isinstance(ref, str):
            name = ref.removeprefix("@").lower()
            named = [c for c in self.chats.values() if c.type != "private" and c.username]
            found = next((c for c in named if str(c.username).lower() == name), None)
        else:
            found = self.chats.get(ref)
        if found is None:
            raise bad_request("chat not found")
        chat = found
        if chat.migrated_to is not None:
            raise ApiError(
                400,
                "Bad Request: group chat was upgraded to a supergroup chat",
                migrate_to_chat_id=chat.migrated_to,
            )
        return chat

    def bot_status(self, chat: Chat) -> Status:
        return chat.members.get(self.bot.id, "left")

    def bot_can(self, chat: Chat, right: str) -> bool:
        status = self.bot_status(chat)
        return status == "creator" or (
            status == "administrator" and right in chat.rights.get(self.bot.id, frozenset())
        )

    def chat_for_bot(self, ref: int | str, *, post: bool = False) -> Chat:
        """The chat, if the bot is in it (and, with ``post``, may post in it). A user who
        never opened a private chat with the bot cannot be written to (403), as on Telegram."""
        if isinstance(ref, int) and ref in self.users and ref not in self.chats:
            raise forbidden("bot can't initiate conversation with a user")
        chat = self.find_chat(ref)
        if chat.type == "private":
            if chat.blocked:
                raise forbidden("bot was blocked by the user")
            if not chat.started:
                raise forbidden("bot can't initiate conversation with a user")
            return chat
        status = self.bot_status(chat)
        kind = {"group": "group chat", "supergroup": "supergroup chat", "channel": "channel chat"}
        if status == "kicked":
            raise forbidden(f"bot was kicked from the {kind[chat.type]}")
        if status == "left":
            raise forbidden(f"bot is not a member of the {kind[chat.type]}")
        if post and chat.type == "channel" and not self.bot_can(chat, "can_post_messages"):
            raise bad_request("need administrator rights in the channel chat")
        if post and status == "restricted":
            raise bad_request("not enough rights to send text messages to the chat")
        return chat

    def message(self, chat: Chat, message_id: int, missing: str) -> StoredMessage:
        """A live message of the chat, or 400 ``missing`` (e.g. "message to edit not found")."""
        found = chat.messages.get(message_id)
        if found is None or found.deleted:
            raise bad_request(missing)
        return found
