"""A person's private chat with the bot, for their follows (``bot.platform.Inbox``).

On Telegram a private chat's id is the person's id, but the bot may write there only once the
person has started it (``/start``), and not while they block it: Telegram answers 403 "bot
can't initiate conversation with a user" or "bot was blocked by the user". A ``follow`` from a
group therefore first asks Telegram with ``sendChatAction`` (it shows "typing..." in that chat
for a moment and posts nothing), paced as a reply; a person it cannot reach is told so, with the
bot's link (``https://t.me/<username>``), and remembered as unreachable (``private``). A
``follow`` typed in the private chat itself needs no question.

A private chat outlives the groups the person shared with the bot: a DM of a group's own count,
not public, is sent only while the follower is still a member of that group
(``ChannelRef.member``, named by ``bot.store.sight.member_of``): :class:`Members` asks
Telegram (``getChatMember``, paced with the DM; a yes kept a while: ``bot.platform.Memberships``,
so a fan-out asks once per member); "left" or "kicked" refuses the DM for good, and the courier
unfollows them once, as one who blocked the bot (``bot.delivery.courier``).
"""

from __future__ import annotations

from collections.abc import Callable

from aiogram import Bot
from aiogram.types import ChatMemberRestricted

from bot.platform import (
    ChannelRef,
    CommandError,
    Inbox,
    Memberships,
    Pace,
    PermanentDeliveryError,
    Replies,
)

from .errors import FAILURES, translate
from .limits import route
from .private import PrivateReplies

PROBE = "sendChatAction"
MEMBER = "getChatMember"
GONE = ("left", "kicked")


def link(bot_username: str) -> str:
    return f"https://t.me/{bot_username}"


class TelegramInbox(Inbox):
    """The private chat of the person who typed a command in ``chat_type``."""

    def __init__(
        self,
        bot: Bot,
        replies: Replies,
        private: PrivateReplies,
        bot_username: str,
        *,
        user_id: int | None,
        chat_type: str,
    ) -> None:
        self.bot = bot
        self.replies = replies
        self.private = private
        self.bot_username = bot_username
        self.user_id = user_id
        self.chat_type = chat_type

    async def open(self) -> str:
        user_id = self.user_id
        if user_id is None:
            raise CommandError("sent as the chat, this has nobody to write to: send it yourself")
        if self.chat_type == "private":
            return str(user_id)
        start = f"open {link(self.bot_username)}, press Start, then follow again"
        if not self.private.direct(self.chat_type, user_id):
            raise CommandError(f"the bot cannot write to you yet: {start}")

        async def probe() -> bool:
            try:
                return await self.bot.send_chat_action(user_id, "typing")
            except FAILURES as exc:
                raise translate(exc, f"telegram private chat {user_id}") from exc

        try:
            await self.replies.send(route(PROBE, user_id), probe)
        except PermanentDeliveryError as exc:
            self.private.unreachable(user_id)
            if "blocked" in str(exc):
                raise CommandError(f"you blocked the bot: unblock it ({start})") from exc
            raise CommandError(f"the bot cannot write to you yet: {start}") from exc
        return str(user_id)


class Members:
    """Whether a person is still a member of a group (the check's memory and rule:
    ``bot.platform.Memberships``)."""

    def __init__(self, bot: Bot, monotonic: Callable[[], float]) -> None:
        self.bot = bot
        self.memberships = Memberships(monotonic)

    async def check(self, channel: ChannelRef, pace: Pace) -> None:
        """Return when ``channel.member`` is a member of the group ``channel.workspace``; raise
        :class:`PermanentDeliveryError` when Telegram says they left or were removed."""

        async def ask(group: str, member: str) -> str | None:
            chat = int(group)
            async with pace(route(MEMBER, chat)):
                try:
                    got = await self.bot.get_chat_member(chat, int(member))
                except FAILURES as exc:
                    raise translate(exc, f"telegram chat {chat}") from exc
            gone = isinstance(got, ChatMemberRestricted) and not got.is_member
            if got.status in GONE or gone:
                return f"chat {chat}, whose count it is ({got.status})"
            return None

        await self.memberships.check(channel, ask)
