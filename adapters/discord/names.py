"""Who an id is in a Discord server, for replies (``bot.commands.request.Names``).

A reply that names a member or a role (``admins add``, a subscription's ``mention=``) shows
the member's display name (their nickname here, else their own) and the role's name, as plain
text: a reply carries no mention and ``allowed_mentions`` none, so it pings nobody. A member is
looked up in the client's cache, else asked of Discord (``GET /guilds/{id}/members/{user}``,
which needs no privileged intent); one that is not in the server, or a lookup that fails, is
shown by id.
"""

from __future__ import annotations

import logging

from adapters.discord.lib import discord
from bot.platform import Names

log = logging.getLogger(__name__)


class DiscordNames(Names):
    """The members and roles of the server a command comes from (none in a DM)."""

    def __init__(self, guild: discord.Guild | None) -> None:
        self.guild = guild

    async def user(self, user_id: str) -> str | None:
        if self.guild is None or not user_id.isdigit():
            return None
        member = self.guild.get_member(int(user_id))
        if member is None:
            try:
                member = await self.guild.fetch_member(int(user_id))
            except (discord.NotFound, discord.Forbidden):
                return None
            except discord.HTTPException as exc:
                log.warning("discord: who user %s is could not be asked: %s", user_id, exc)
                return None
        return member.display_name

    async def group(self, group_id: str) -> str | None:
        if self.guild is None or not group_id.isdigit():
            return None
        role = self.guild.get_role(int(group_id))
        return role.name if role is not None else None
