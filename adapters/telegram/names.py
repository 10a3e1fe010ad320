"""Who an id is in a Telegram chat, for replies (``bot.commands.request.Names``).

A reply that names a user (``admins add``) shows the member's name: from the update itself when
it carries them (the sender, the message replied to, a mention of someone without a username),
else as ``getChatMember`` gives it in the chat the command came from. Their name, never their
``@username``: a username in a message links and notifies them. One who is not in the chat, or
a lookup that fails, is shown by id. Telegram has no roles.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from aiogram import Bot
from aiogram.types import Message, User

from bot.platform import Names

from .errors import FAILURES

log = logging.getLogger("tallybot.telegram")


def full_name(user: User) -> str:
    """``First Last``, as Telegram shows a member."""
    return " ".join(filter(None, (user.first_name, user.last_name))) or str(user.id)


def named_in(message: Message) -> dict[str, str]:
    """The users ``message`` carries, by id: its sender, the sender of the message it replies
    to, and everyone mentioned by name (``text_mention``)."""
    users: list[User | None] = [message.from_user]
    if message.reply_to_message is not None:
        users.append(message.reply_to_message.from_user)
    users.extend(e.user for e in message.entities or () if e.type == "text_mention")
    return {str(u.id): full_name(u) for u in users if u is not None}


class TelegramNames(Names):
    """The members of the chat a command comes from."""

    def __init__(
        self, bot: Bot, chat_id: int, known: Mapping[str, str] | Iterable[tuple[str, str]]
    ):
        self.bot = bot
        self.chat_id = chat_id
        self.known = dict(known)

    async def user(self, user_id: str) -> str | None:
        if user_id in self.known:
            return self.known[user_id]
        if not user_id.isdigit():
            return None
        try:
            member = await self.bot.get_chat_member(self.chat_id, int(user_id))
        except FAILURES as exc:
            log.warning("telegram: who user %s is could not be asked: %s", user_id, exc)
            return None
        if member.status in ("left", "kicked"):
            return None
        return full_name(member.user)

    async def group(self, group_id: str) -> str | None:
        return None
