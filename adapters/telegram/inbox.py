"""A person's private chat with the bot, for their follows (``bot.platform.Inbox``).

On Telegram a private chat's id is the person's id, but the bot may write there only once the
person has started it (``/start``), and not while they block it: Telegram answers 403 "bot
can't initiate conversation with a user" or "bot was blocked by the user". A ``follow`` from a
group therefore first asks Telegram with ``sendChatAction`` (it shows "typing..." in that chat
for a moment and posts nothing), paced as a reply; a person it cannot reach is told so, with the
bot's link (``https://t.me/<username>``), and remembered as unreachable (``private``). A
``follow`` typed in the private chat itself needs no question.
"""

from __future__ import annotations

from aiogram import Bot

from bot.platform import CommandError, Inbox, PermanentDeliveryError, Replies

from .errors import FAILURES, translate
from .limits import route
from .private import PrivateReplies

PROBE = "sendChatAction"


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
