"""Setting up the fake's world: users, guilds, channels, roles, members, permissions, and
the gateway going down; changes made after the client connected go out as gateway events."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from .announce import make_follower
from .models import (
    ATTACH_FILES,
    DEFAULT_EVERYONE_PERMISSIONS,
    INTENT_GUILD_MEMBERS,
    INTENT_GUILDS,
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    Channel,
    Guild,
    Member,
    Overwrite,
    Role,
    User,
    iso,
)
from .payloads import channel as channel_payload
from .payloads import member as member_payload
from .payloads import role as role_payload
from .state import FakeDiscord


def invite_permissions(url: str) -> int:
    """The permissions an install link grants: Discord makes the bot's role in the server with
    exactly its ``permissions``. A link without the ``bot`` scope adds no bot at all."""
    query = parse_qs(urlsplit(url).query)
    scopes = " ".join(query.get("scope", [])).split()
    if "bot" not in scopes:
        raise ValueError(f"the link's scopes {scopes} do not add a bot to a server")
    return int(query.get("permissions", ["0"])[0])


class WorldSetup:
    """The world-setup half of ``server.FakeDiscord`` (a mixin over the fake's state)."""

    def add_user(
        self: FakeDiscord, name: str, *, user_id: int | None = None, bot: bool = False
    ) -> int:
        uid = user_id if user_id is not None else self.snowflakes.next()
        self.users[uid] = User(uid, name, bot=bot)
        return uid

    def add_guild(
        self: FakeDiscord,
        name: str,
        *,
        owner_id: int | None = None,
        shard: tuple[int, int] | None = None,
    ) -> int:
        """A guild the bot is in; ``shard=(N, COUNT)``: one whose events go to shard N."""
        gid = self.snowflakes.next() if shard is None else self.snowflakes.on_shard(*shard)
        joined = iso(self.wall_time())
        guild = Guild(gid, name, owner_id if owner_id is not None else self.owner_user_id, joined)
        guild.roles[gid] = Role(gid, gid, "@everyone", DEFAULT_EVERYONE_PERMISSIONS, 0)
        bot_role = Role(
            self.snowflakes.next(),
            gid,
            self.users[self.bot_user_id].name,
            self.bot_role_permissions,
            1,
            managed=True,
            bot_id=self.bot_user_id,
        )
        guild.roles[bot_role.id] = bot_role
        guild.members[self.bot_user_id] = Member(self.bot_user_id, gid, [bot_role.id], joined)
        self.guilds[gid] = guild
        self.gateway.guild_added(guild)
        return gid

    def dm_channel(self: FakeDiscord, user_id: int) -> int:
        """The id of the user's DM channel with the bot (opened if need be)."""
        chan = next((c for c in self.channels.values() if c.recipient_id == user_id), None)
        if chan is None:
            chan = Channel(self.snowflakes.next(), None, "", 1, recipient_id=user_id)
            self.channels[chan.id] = chan
        return chan.id

    def remove_bot(self: FakeDiscord, guild_id: int) -> None:
        """The bot is kicked from the guild: it is no longer a member (every channel there
        answers 403 Missing Access) and its sessions get GUILD_DELETE."""
        self.guilds[guild_id].members.pop(self.bot_user_id, None)
        self.gateway.dispatch("GUILD_DELETE", {"id": str(guild_id)}, guild_id, INTENT_GUILDS)

    def add_channel(self: FakeDiscord, guild_id: int, name: str, *, kind: int = 0) -> int:
        """A text channel; ``kind=5``: an announcement channel (``announce``)."""
        guild = self.guilds[guild_id]
        cid = self.snowflakes.next()
        chan = Channel(cid, guild_id, name, kind, position=len(guild.channels))
        self.channels[cid] = chan
        guild.channels.append(cid)
        self.gateway.dispatch("CHANNEL_CREATE", channel_payload(chan), guild_id, INTENT_GUILDS)
        return cid

    def add_role(
        self: FakeDiscord,
        guild_id: int,
        name: str,
        *,
        permissions: int = 0,
        mentionable: bool = False,
    ) -> int:
        guild = self.guilds[guild_id]
        rid = self.snowflakes.next()
        role = Role(rid, guild_id, name, permissions, len(guild.roles), mentionable=mentionable)
        guild.roles[rid] = role
        data = {"guild_id": str(guild_id), "role": role_payload(role)}
        self.gateway.dispatch("GUILD_ROLE_CREATE", data, guild_id, INTENT_GUILDS)
        return rid

    def add_member(
        self: FakeDiscord,
        guild_id: int,
        user_id: int,
        name: str,
        *,
        roles: list[int] | None = None,
        permissions: int = 0,
    ) -> None:
        """Add a (human) member. ``permissions`` is OR-ed into what its roles give it."""
        guild = self.guilds[guild_id]
        for rid in roles or []:
            if rid not in guild.roles:
                raise ValueError(f"role {rid} is not in guild {guild_id}")
        if user_id not in self.users:
            self.users[user_id] = User(user_id, name)
        member = Member(user_id, guild_id, list(roles or []), iso(self.wall_time()), permissions)
        guild.members[user_id] = member
        data = {**member_payload(member, self.users[user_id]), "guild_id": str(guild_id)}
        self.gateway.dispatch("GUILD_MEMBER_ADD", data, guild_id, INTENT_GUILD_MEMBERS)

    def remove_member(self: FakeDiscord, guild_id: int, user_id: int) -> None:
        """The member leaves the server (``GUILD_MEMBER_REMOVE``)."""
        del self.guilds[guild_id].members[user_id]
        data = {"guild_id": str(guild_id), "user": {"id": str(user_id)}}
        self.gateway.dispatch("GUILD_MEMBER_REMOVE", data, guild_id, INTENT_GUILD_MEMBERS)

    def block_bot(self: FakeDiscord, user_id: int, blocked: bool = True) -> None:
        """The user blocks the bot (or closes their DMs): DMs to them answer code 50007."""
        self.users[user_id].refuses_dms = blocked

    def shares_a_server(self: FakeDiscord, user_id: int) -> bool:
        """Whether the user is in a server the bot is in (a bot may DM only such a user)."""
        return any(
            user_id in g.members and self.bot_user_id in g.members for g in self.guilds.values()
        )

    def delete_channel(self: FakeDiscord, channel_id: int) -> None:
        """Delete a channel: later REST calls on it answer 404 code 10003."""
        chan = self.channels[channel_id]
        chan.deleted = True
        if chan.guild_id is not None:
            self.guilds[chan.guild_id].channels.remove(channel_id)
            self.gateway.dispatch(
                "CHANNEL_DELETE", channel_payload(chan), chan.guild_id, INTENT_GUILDS
            )

    def grant_bot(self: FakeDiscord, guild_id: int, permissions: int) -> None:
        """Give the bot's role more permissions in a server (Create Public Threads, Pin
        Messages...), announced by GUILD_ROLE_UPDATE."""
        guild = self.guilds[guild_id]
        member = guild.members[self.bot_user_id]
        role = next(guild.roles[r] for r in member.roles if guild.roles[r].bot_id is not None)
        role.permissions |= permissions
        data = {"guild_id": str(guild_id), "role": role_payload(role)}
        self.gateway.dispatch("GUILD_ROLE_UPDATE", data, guild_id, INTENT_GUILDS)

    def follow(self: FakeDiscord, source: int, target: int) -> int:
        """``target`` follows the announcement channel ``source``, as a person following it
        through Discord's own menu would (no request of the bot's); the webhook's id."""
        return make_follower(self, source, target).id

    def followers(self: FakeDiscord, source: int) -> list[int]:
        """The channels that follow the announcement channel ``source``."""
        return sorted(h.channel_id for h in self.webhooks.values() if h.source_channel_id == source)

    def delete_thread(self: FakeDiscord, thread_id: int) -> None:
        """Delete a thread (its first message stays): later posts in it answer 404 10003."""
        self.channels[thread_id].deleted = True

    def revoke_send(self: FakeDiscord, channel_id: int) -> None:
        """Deny the bot SEND_MESSAGES in a channel (a member overwrite, announced by
        CHANNEL_UPDATE): later sends answer 403 code 50013."""
        _set_bot_overwrite(self, channel_id, deny=SEND_MESSAGES)

    def revoke_read_history(self: FakeDiscord, channel_id: int) -> None:
        """Deny the bot READ_MESSAGE_HISTORY in a channel: reading its messages then answers
        an empty list (as Discord documents), not an error."""
        _set_bot_overwrite(self, channel_id, deny=READ_MESSAGE_HISTORY)

    def restore_send(self: FakeDiscord, channel_id: int) -> None:
        _set_bot_overwrite(self, channel_id, deny=0)

    def revoke_attach_files(self: FakeDiscord, channel_id: int) -> None:
        """Deny the bot ATTACH_FILES in a channel: later sends with a file answer 403 code
        50013 (sends without one still go through)."""
        _set_bot_overwrite(self, channel_id, deny=ATTACH_FILES)

    async def disconnect_gateway(self: FakeDiscord, code: int = 4000) -> None:
        """Close every live gateway connection (discord.py then RESUMEs)."""
        await self.gateway.drop_all(code)

    async def kill_gateway(self: FakeDiscord) -> None:
        """The gateway goes down: live connections are dropped and new ones refused (503)
        until :meth:`revive_gateway`."""
        self.gateway.down = True
        await self.gateway.drop_all(4000)

    def revive_gateway(self: FakeDiscord) -> None:
        self.gateway.down = False
        self.notify()


def _set_bot_overwrite(fake: FakeDiscord, channel_id: int, *, deny: int) -> None:
    chan = fake.channels[channel_id]
    chan.overwrites = [o for o in chan.overwrites if o.id != fake.bot_user_id]
    if deny:
        chan.overwrites.append(Overwrite(fake.bot_user_id, 1, 0, deny))
    if chan.guild_id is not None:
        fake.gateway.dispatch("CHANNEL_UPDATE", channel_payload(chan), chan.guild_id, INTENT_GUILDS)
