"""The ``[discord]`` table: where Discord is, where ``/count`` is synced, and who is an admin.

Checked with the rest of the file (:mod:`bot.settings`); a key is one line below.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, PlainValidator, model_validator

from bot.platform import LISTS, HttpUrl, Ids, Loc, PlatformTable, Text, bad, describe, problems
from bot.platform import LimitsSetting as Limits

TOKEN = "DISCORD_TOKEN"
MOVED = {
    "discord_users": "admin_users",
    "discord_roles": "admin_roles",
    "discord_guilds": "admin_guilds",
}
"""The keys of ``[admins]`` that moved here, and their new names."""
_SERVER_ID = (
    "is not a server id: guilds are numbers like 123456789012345678 (Developer Mode on, "
    "right-click the server, Copy Server ID)"
)


def _guilds(value: object) -> tuple[int, ...]:
    if not isinstance(value, LISTS):
        raise bad(f"expected a list, got {describe(value)}")
    found: list[tuple[Loc, str]] = []
    for i, g in enumerate(value):
        if isinstance(g, bool) or not isinstance(g, int | str) or not str(g).isdigit():
            found.append(((i,), f"{describe(g)} {_SERVER_ID}"))
    problems("guilds", found)
    return tuple(int(g) for g in value)


MAX_SHARDS = 65_536


def _shard_count(value: object) -> int | None:
    if value == "auto":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SHARDS:
        raise bad(
            f'expected a whole number of shards from 1 to {MAX_SHARDS} or "auto", got '
            f"{describe(value)}"
        )
    return value


def _shard_ids(value: object) -> tuple[int, ...] | None:
    if not isinstance(value, LISTS) or not value:
        raise bad(f"expected a list of shard numbers (0, 1, ...), got {describe(value)}")
    found: list[tuple[Loc, str]] = []
    for i, s in enumerate(value):
        if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < MAX_SHARDS:
            found.append(((i,), f"{describe(s)} is not a shard number (0, 1, ...)"))
    problems("shard_ids", found)
    if len(set(value)) != len(value):
        raise bad("a shard is listed twice")
    return tuple(sorted(value))


def _announcements(value: object) -> dict[str, int]:
    if not isinstance(value, dict):
        raise bad(f"expected a table of count = channel id, got {describe(value)}")
    found: list[tuple[Loc, str]] = []
    for count, channel in value.items():
        if isinstance(channel, bool) or not str(channel).isdigit():
            found.append(((str(count),), f"{describe(channel)} is not a channel id"))
    problems("announcements", found)
    return {str(count): int(channel) for count, channel in value.items()}


def _guild_ids(value: frozenset[str]) -> frozenset[str]:
    for guild in sorted(value):
        if not guild.isascii() or not guild.isdigit():
            raise bad(f"{guild!r} is not a Discord server (guild) id")
    return value


class DiscordSettings(PlatformTable):
    api_base: HttpUrl = "https://discord.com/api/v10"
    gateway_url: Text = "wss://gateway.discord.gg"
    guilds: Annotated[tuple[int, ...], PlainValidator(_guilds)] = ()
    """Servers ``/count`` is synced to at once (else globally, which takes up to an hour)."""
    limits: Limits = Field(default_factory=dict)
    """``[discord.limits]``: rate-limit buckets changed by name, ``name = [requests, seconds]``
    (see ``adapters.discord.delivery.DISCORD_LIMITS``)."""
    admin_users: Ids = frozenset()
    """User ids that are admins in every server."""
    admin_roles: Ids = frozenset()
    """Role names or ids that make an admin, in the ``admin_guilds`` only."""
    admin_guilds: Annotated[Ids, AfterValidator(_guild_ids)] = frozenset()
    """Server ids where Manage Server, Administrator and ``admin_roles`` make an admin."""
    announcements: Annotated[dict[str, int], PlainValidator(_announcements)] = Field(
        default_factory=dict
    )
    """``[discord.announcements]``: ``count = channel id``, the operator's announcement channel
    of each count that other servers' channels may follow (``subscribe <count> via=#channel``)."""
    shard_count: Annotated[int | None, PlainValidator(_shard_count)] = 1
    """How many gateway shards the bot has (``"auto"``: as many as Discord recommends, None
    here); the instances of a PostgreSQL store divide them (``adapters.discord.shards``)."""
    shard_ids: Annotated[tuple[int, ...] | None, PlainValidator(_shard_ids)] = None
    """The shards this instance runs, fixed (default: its share, through leases)."""

    @model_validator(mode="after")
    def _shards_exist(self) -> DiscordSettings:
        count = self.shard_count
        if count is not None and self.shard_ids and max(self.shard_ids) >= count:
            raise bad(f"shard_ids: the bot has {count} shards, numbered 0 to {count - 1}")
        return self
