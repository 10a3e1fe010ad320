"""Whether a person is still a member of a server, asked before a DM of that server's own count
when it is not public (``ChannelRef.member``; the check's memory and rule:
``bot.platform.Memberships``): ``GET /guilds/{guild_id}/members/{user_id}``, paced with the DM
(the fake and Discord limit it per server); Unknown Member (404, code 10007) is a no.
"""

from __future__ import annotations

from collections.abc import Callable

from adapters.discord.lib import discord
from bot.platform import ChannelRef, DeliveryError, Memberships, Pace, Route

MEMBER_ROUTE = "GET /guilds/{guild_id}/members/{user_id}"
UNKNOWN_MEMBER = 10007


class Members:
    """The check on Discord."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self.memberships = Memberships(monotonic)

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

        async def ask(guild: str, member: str) -> str | None:
            async with pace(Route(MEMBER_ROUTE, guild)):
                try:
                    await client.http.get_member(int(guild), int(member))
                except discord.NotFound as exc:
                    if exc.code != UNKNOWN_MEMBER:
                        raise translate(exc, channel) from exc
                    return f"server {guild}, whose count it is (code {UNKNOWN_MEMBER})"
                except failures as exc:
                    raise translate(exc, channel) from exc
            return None

        await self.memberships.check(channel, ask)
