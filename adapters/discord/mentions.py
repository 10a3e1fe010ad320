"""Role pings on Discord (``mention=@role``): who may set one, and the only mention a post
ever carries.

A subscription may name a role that tallybot pings on its calls and its final (see
``bot.domain.subscription``). Setting it needs Discord's own right to mention that role, for the
person and for the bot: the role is mentionable, or they have Mention Everyone. ``@everyone`` and
``@here`` are never accepted. A post with a mention carries ``<@&ID>`` as its content and
``allowed_mentions`` that lists exactly that role: no user, no ``@everyone``, no other role.
"""

from __future__ import annotations

import re

from adapters.discord.lib import discord
from bot.platform import CommandError, Mentions, Message, Outgoing

ROLE_ID = re.compile(r"^(?:<@&(\d{1,20})>|@(\d{1,20}))$")
NO_MENTIONS = discord.AllowedMentions.none()


def role_ping(content: Outgoing) -> tuple[str | None, discord.AllowedMentions]:
    """The content and ``allowed_mentions`` of a post: the role it pings, or nothing at all."""
    mention = content.mention if isinstance(content, Message) else None
    if mention is None or not mention.isdigit():
        return None, NO_MENTIONS
    allowed = discord.AllowedMentions(
        everyone=False, users=False, roles=[discord.Object(int(mention))], replied_user=False
    )
    return f"<@&{mention}>", allowed


class DiscordMentions(Mentions):
    """The roles of the server a command comes from, as the person and the bot may ping them."""

    kind = "role"

    def __init__(
        self,
        guild: discord.Guild | None,
        person: discord.Permissions,
        bot: discord.Permissions,
    ) -> None:
        self.guild = guild
        self.person = person
        self.bot = bot

    async def resolve(self, typed: str) -> str:
        if self.guild is None:
            raise CommandError("mention= works in a server's channels, not here")
        role = self._role(typed)
        if role is None:
            raise CommandError(
                f"no role {typed[:40]!r} in this server: pick it after mention=@ from the list "
                "Discord offers"
            )
        if role.is_default() or typed.lower() in {"@everyone", "@here"}:
            raise CommandError("tallybot never pings @everyone or @here: name a role")
        if not (role.mentionable or self.person.mention_everyone):
            raise CommandError(
                f"you may not mention @{role.name}: it is not mentionable and you lack Mention "
                "Everyone"
            )
        if not (role.mentionable or self.bot.mention_everyone):
            raise CommandError(
                f"tallybot may not mention @{role.name}: make the role mentionable or give "
                "tallybot Mention Everyone"
            )
        return str(role.id)

    def _role(self, typed: str) -> discord.Role | None:
        assert self.guild is not None
        by_id = ROLE_ID.match(typed.strip())
        if by_id is not None:
            return self.guild.get_role(int(by_id.group(1) or by_id.group(2)))
        name = typed.strip().removeprefix("@").lower()
        return next((r for r in self.guild.roles if r.name.lower() == name), None)
