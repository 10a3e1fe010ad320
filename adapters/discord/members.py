"""Whether a person is still a member of a server, asked before a DM of that server's own count
when it is not public (``ChannelRef.member``, named by ``bot.store.sight.members_only``).

Following confers nothing outside the place the follow was made in: a member who left the
server (or was kicked) but still shares another with the bot can still be sent DMs, so the
bot asks Discord first (``GET /guilds/{guild_id}/members/{user_id}``, paced with the DM: the
fake and Discord limit it per server). A yes is kept for ``KEEP_S`` (the injected clock), so a
fan-out of one update to many followers asks once per member, not once per message; a no,
Unknown Member (404, code 10007), refuses the DM for good: the courier unfollows them once, as
one who blocked the bot (``bot.delivery.courier``).
"""

from __future__ import annotations

from collections.abc import Callable

from cachetools import LRUCache

from adapters.discord.lib import discord
from bot.platform import ChannelRef, DeliveryError, Pace, PermanentDeliveryError, Route

MEMBER_ROUTE = "GET /guilds/{guild_id}/members/{user_id}"
UNKNOWN_MEMBER = 10007
KEEP_S = 600.0
"""How long a yes is believed (10 minutes)."""
KEPT = 65_536


class Members:
    """The check, with its yeses kept per (server, person)."""

    def __init__(self, monotonic: Callable[[], float], keep_s: float = KEEP_S) -> None:
        self.monotonic = monotonic
        self.keep_s = keep_s
        self._yes: LRUCache[tuple[str, str], float] = LRUCache(KEPT)

    async def check(
        self,
        client: discord.Client,
        channel: ChannelRef,
        pace: Pace,
        translate: Callable[[BaseException, ChannelRef], DeliveryError],
        failures: tuple[type[BaseException], ...],
    ) -> None:
        """Return when ``channel.member`` is a member of ``channel.workspace``; raise
        :class:`PermanentDeliveryError` when Discord says they are not."""
        member = channel.member
        if member is None:
            return
        key = (channel.workspace, member)
        until = self._yes.get(key)
        if until is not None and self.monotonic() < until:
            return
        async with pace(Route(MEMBER_ROUTE, channel.workspace)):
            try:
                await client.http.get_member(int(channel.workspace), int(member))
            except discord.NotFound as exc:
                if exc.code != UNKNOWN_MEMBER:
                    raise translate(exc, channel) from exc
                self._yes.pop(key, None)
                raise PermanentDeliveryError(
                    f"{channel}: user {member} is no longer a member of server "
                    f"{channel.workspace}, whose count it is (code {UNKNOWN_MEMBER})"
                ) from exc
            except failures as exc:
                raise translate(exc, channel) from exc
        self._yes[key] = self.monotonic() + self.keep_s
