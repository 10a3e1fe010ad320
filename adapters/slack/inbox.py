"""A member's direct messages with the bot, for their follows (``bot.platform.Inbox``).

``follow`` opens the member's DM with the bot (``conversations.open`` with ``users``, scope
``im:write``, Tier 3: paced as a reply under its own bucket) with the token of the workspace
the command comes from, and keeps the DM's id (``D…``): every message of the follow is then a
``chat.postMessage`` there, confirmed from its history (``im:history``) like any channel's.
Slack refuses a deactivated member (``user_disabled``) and the invisible (``user_not_visible``):
``follow`` says so. Slack still accepts posts to a DM whose member was deactivated later
(python-slack-sdk#1156): the ``user_change`` event of that deactivation ends their follows
(``SlackAdapter._on_user_change``, ``Context.person_left``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.platform import CommandError, Inbox, RateLimited, Replies, Route

from .delivery import translate

OPEN = "conversations.open"
REFUSED = {
    "user_disabled": "your Slack account is deactivated",
    "user_not_visible": "the bot may not see you in this workspace",
    "user_not_found": "Slack does not know you in this workspace",
    "cannot_dm_bot": "a bot cannot follow",
}


class SlackInbox(Inbox):
    """The DM with the bot of the member who typed a command."""

    def __init__(
        self,
        client: Callable[[], Awaitable[AsyncWebClient]],
        replies: Replies,
        user_id: str,
    ) -> None:
        self.client = client
        self.replies = replies
        self.user_id = user_id

    async def open(self) -> str:
        return await self.replies.send(Route(OPEN), self._open)

    async def _open(self) -> str:
        client = await self.client()
        try:
            answer = await client.conversations_open(users=self.user_id)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in REFUSED:
                raise CommandError(f"the bot cannot write to you: {REFUSED[error]}") from exc
            failed = translate(exc, "opening your DM")
            if isinstance(failed, RateLimited):
                raise failed from exc  # waited out by the replies
            raise CommandError(str(failed)) from exc
        channel = answer.get("channel") or {}
        return str(channel.get("id", ""))
