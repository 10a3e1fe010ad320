"""The ``[discord]`` table: where Discord is, where ``/count`` is synced, and who is an admin."""

from __future__ import annotations

from dataclasses import dataclass

from bot.config_platforms import read_limits
from bot.config_reader import Reader, describe

TOKEN = "DISCORD_TOKEN"
KEYS = ("api_base", "gateway_url", "guilds", "limits", "admin_users", "admin_roles", "admin_guilds")
MOVED = {
    "discord_users": "admin_users",
    "discord_roles": "admin_roles",
    "discord_guilds": "admin_guilds",
}
"""The keys of ``[admins]`` that moved here, and their new names."""


@dataclass(frozen=True, slots=True)
class DiscordSettings:
    api_base: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg"
    guilds: tuple[int, ...] = ()
    """Servers ``/count`` is synced to at once (else globally, which takes up to an hour)."""
    limits: tuple[tuple[str, int, float], ...] = ()
    """``[discord.limits]``: rate-limit buckets changed by name, ``name = [requests, seconds]``
    (see ``adapters.discord.delivery.DISCORD_LIMITS``)."""
    admin_users: frozenset[str] = frozenset()
    """User ids that are admins in every server."""
    admin_roles: frozenset[str] = frozenset()
    """Role names or ids that make an admin, in the ``admin_guilds`` only."""
    admin_guilds: frozenset[str] = frozenset()
    """Server ids where Manage Server, Administrator and ``admin_roles`` make an admin."""


def read(r: Reader) -> DiscordSettings:
    d = DiscordSettings()
    guilds = []
    for j, g in enumerate(r.get("guilds", list, [])):
        if isinstance(g, bool) or not isinstance(g, int | str) or not str(g).isdigit():
            r.problems.add(
                str(
                    r.error(
                        f"guilds[{j}]",
                        f"{describe(g)} is not a server id: guilds are numbers like "
                        "123456789012345678 (Developer Mode on, right-click the server, "
                        "Copy Server ID)",
                    )
                )
            )
            continue
        guilds.append(int(g))
    admin_guilds = _ids(r, "admin_guilds")
    for guild in sorted(admin_guilds):
        if not guild.isascii() or not guild.isdigit():
            raise r.error("admin_guilds", f"{guild!r} is not a Discord server (guild) id")
    return DiscordSettings(
        api_base=r.get("api_base", str, d.api_base),
        gateway_url=r.get("gateway_url", str, d.gateway_url),
        guilds=tuple(guilds),
        limits=read_limits(r),
        admin_users=_ids(r, "admin_users"),
        admin_roles=_ids(r, "admin_roles"),
        admin_guilds=admin_guilds,
    )


def _ids(r: Reader, key: str) -> frozenset[str]:
    return frozenset(str(v) for v in r.get(key, list, []))
