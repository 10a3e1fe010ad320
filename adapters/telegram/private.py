"""What "only you see this" means on Telegram, which has no ephemeral messages.

The core marks a reply private (``Reply.ephemeral``): errors, help, lists, "Slow down", and a
public answer beyond the channel's one per window (``bot.commands.throttle``). In a private
chat every reply is private already. In a group, a private reply never shows in the group:

- it goes to the member's private chat with the bot, when the member has started the bot
  (Telegram answers 403 "bot can't initiate conversation with a user" otherwise; such a member
  is remembered for :data:`UNREACHABLE_S`, and forgotten as soon as they send ``/start``);
- otherwise the group gets at most one short :func:`notice` (how to get such answers) per the
  channel's public window (``Throttle.publish``: the same budget as public replies, so a flood
  of commands shows the group at most one message per window, whoever sends them);
- a command sent *as the chat* (an anonymous admin, a channel post) has nobody to write to:
  its private reply shows in the chat itself, within the same budget.

So a secret (``Request.private_replies``) reaches only the asker's private chat, and nothing
from a flood floods a group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TTLCache

from bot.platform import ChannelRef, Platform, Reply, Throttle

UNREACHABLE_S = 600.0
"""How long a member who has not started the bot is not written to privately."""
UNREACHABLE_KEPT = 4096
GROUP_TYPES = ("group", "supergroup", "channel")


def notice(bot_username: str) -> Reply:
    """The one line a group gets instead of a member's private answer."""
    return Reply(
        f"I answer that privately: open https://t.me/{bot_username} and press Start, "
        "then ask again.",
        ok=True,
        ephemeral=False,
    )


@dataclass(frozen=True, slots=True)
class Where:
    """Where one reply goes: the chat to post in, and the reply itself (or the notice)."""

    chat_id: int
    reply: Reply
    private: bool
    """To the member's private chat (not in reply to the command message)."""


class PrivateReplies:
    """Decides where each reply goes (see the module docstring)."""

    def __init__(
        self,
        throttle: Throttle,
        monotonic: Callable[[], float],
        *,
        platform: Platform,
        bot_username: str,
    ) -> None:
        self.throttle = throttle
        self.platform = platform
        self._notice = notice(bot_username)
        self._unreachable: TTLCache[int, bool, float] = TTLCache(
            UNREACHABLE_KEPT, UNREACHABLE_S, timer=monotonic
        )

    def started(self, user_id: int) -> None:
        """The member started the bot (``/start`` in their private chat)."""
        self._unreachable.pop(user_id, None)

    def unreachable(self, user_id: int) -> None:
        """Telegram refused to write to the member privately."""
        self._unreachable[user_id] = True

    def direct(self, chat_type: str, user_id: int | None) -> bool:
        """Whether a private reply to this member can go to their private chat (so far as is
        known): a member in a group, who has not been found unreachable."""
        return chat_type in GROUP_TYPES and user_id is not None and user_id not in self._unreachable

    def first(
        self, chat_id: int, chat_type: str, user_id: int | None, reply: Reply
    ) -> Where | None:
        """Where ``reply`` goes first (None: nowhere, the group had its message this window)."""
        if chat_type not in GROUP_TYPES or not reply.ephemeral:
            return Where(chat_id, reply, private=False)
        if user_id is not None and self.direct(chat_type, user_id):
            return Where(user_id, reply, private=True)
        return self.fallback(chat_id, user_id, reply)

    def fallback(self, chat_id: int, user_id: int | None, reply: Reply) -> Where | None:
        """Where a private reply goes when the member cannot be written to: the chat's one
        message per window, the notice (or, sent as the chat, the reply itself)."""
        channel = ChannelRef(self.platform, str(chat_id), str(chat_id))  # as commands name it
        if not self.throttle.publish(channel):
            return None
        return Where(chat_id, reply if user_id is None else self._notice, private=False)
