"""A member's direct messages with the bot, for their follows (``bot.platform.Inbox``).

``follow`` typed in a server opens the member's DM channel with the bot (``POST
/users/@me/channels``, paced as a reply under its own bucket: Discord rate limits opening DMs
per bot and publishes no figure) and keeps its id: every message of the follow is then a post
to that channel, confirmed from its history like any channel's. Typed in the DM itself, the DM
is the channel. Discord refuses a member who blocked the bot or takes no DMs from the server's
members with code 50007 (400 when opening, 403 when posting): ``follow`` says so; a post
refused later unfollows them (``bot.delivery.courier``).
"""

from __future__ import annotations

from adapters.discord.delivery import CANNOT_DM, DM_ROUTE, FAILURES
from adapters.discord.lib import discord
from bot.platform import CommandError, Inbox, RateLimited, Replies, Route, retry_after_header

REFUSED = (
    "Discord will not let the bot write to you: allow direct messages from this server's "
    "members (Privacy Settings), or unblock the bot, then follow again"
)


class DiscordInbox(Inbox):
    """The DM channel of the member who typed a command (in ``channel_id``: a DM's own)."""

    def __init__(
        self, client: discord.Client, replies: Replies, user_id: int, *, dm: int | None
    ) -> None:
        self.client = client
        self.replies = replies
        self.user_id = user_id
        self.dm = dm

    async def open(self) -> str:
        if self.dm is not None:
            return str(self.dm)
        return await self.replies.send(Route(DM_ROUTE), self._open)

    async def _open(self) -> str:
        try:
            data = await self.client.http.start_private_message(self.user_id)
        except discord.HTTPException as exc:
            if exc.code == CANNOT_DM:
                raise CommandError(REFUSED) from exc
            if exc.status == 429:
                wait = retry_after_header(exc.response.headers)
                raise RateLimited("opening a DM channel: 429", retry_after=wait) from exc
            raise CommandError(f"Discord did not open a DM channel ({exc.status})") from exc
        except FAILURES as exc:
            raise CommandError(f"Discord did not open a DM channel ({exc!r})") from exc
        return str(data["id"])
