"""Who is an admin on Discord: authority stops at the edge of each server.

A server's own counts are administered by its admins: members with Manage Server or
Administrator *in that server* (``tenant_admin``), plus the per-count grants the core keeps. The
operator's counts (the configuration file's) are administered by the configured user ids
(``[discord] admin_users``) and, only inside the servers listed under ``admin_guilds`` (the
operator's own: ``home``, where the operator's private counts are seen), by members with Manage
Server, Administrator or one of the ``admin_roles``: the owner of any other server the bot is in
would otherwise command the operator's counts.

A DM with the bot is a place of its own (:func:`dm_place`: ``@`` and the DM channel's id), not
a server and not shared with anyone else's DM: the counts made there are its own, and its only
admins are the operator's (``admin_users``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from adapters.discord.settings import DiscordSettings
from bot.platform import AdminPolicy, Asker, Verdict

log = logging.getLogger(__name__)


DM = "@"
"""How the place of a DM begins (a server's place is its id, all digits)."""


def dm_place(channel_id: int | None) -> str:
    """The place of the DM channel ``channel_id``."""
    return f"{DM}{channel_id}"


def is_dm(workspace: str) -> bool:
    return workspace.startswith(DM)


class DiscordAdmins(AdminPolicy):
    def __init__(self, settings: DiscordSettings) -> None:
        self.users = settings.admin_users
        self.roles = settings.admin_roles
        self.guilds = settings.admin_guilds

    def verdict(self, asker: Asker) -> Verdict:
        home = asker.workspace in self.guilds
        dm = is_dm(asker.workspace)
        here = asker.platform_admin and not dm
        if asker.user_id in self.users:
            return Verdict(True, tenant_admin=here or dm, home=home)
        rights = asker.platform_admin or bool(asker.roles & self.roles)
        if rights and home:
            return Verdict(True, tenant_admin=here, home=home)
        if rights:
            return Verdict(
                False,
                "refused: Manage Server and admin roles count only in the servers listed in "
                f"[discord] admin_guilds, and {asker.workspace} is not one",
                tenant_admin=here,
            )
        return Verdict(home=home)

    def warn_about(
        self,
        guilds: Iterable[tuple[str, Iterable[str]]],
        covers: Callable[[str], bool] = lambda guild: True,
    ) -> None:
        """Warn about settings that make nobody an admin, given the servers the bot is in (id,
        role ids and names) among those this instance sees (``covers``: those of the shards it
        runs): no server listed under ``admin_guilds`` (only ``admin_users`` are admins then),
        a listed server the bot is not in, a configured role that no listed server has (a
        typo?)."""
        if not self.guilds:
            log.warning(
                "discord.admin_guilds lists no server: Manage Server and admin roles make "
                "nobody an admin, only discord.admin_users are"
            )
        listed = {guild: set(roles) for guild, roles in guilds if guild in self.guilds}
        for missing in sorted(g for g in self.guilds - set(listed) if covers(g)):
            log.warning("discord.admin_guilds: the bot is not in server %s", missing)
        known = set().union(*listed.values()) if listed else set()
        if not all(covers(g) for g in self.guilds):
            return  # another instance sees the other servers' roles
        for role in sorted(self.roles - known):
            log.warning(
                "discord.admin_roles: no server in discord.admin_guilds has a role %r", role
            )
