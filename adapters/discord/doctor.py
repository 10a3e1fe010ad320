"""``tallybot doctor`` on Discord (``Plugin.doctor``, :mod:`bot.ops.checkup`), without posting:
the login (``GET /users/@me``, ``GET /oauth2/applications/@me``: the token, and the application
flags that say which privileged gateway intents are on), then for each subscribed channel the
bot's permissions there, computed as Discord does from the server's roles, the bot's member and
the channel's overwrites (``GET /channels/{id}``, ``/guilds/{id}``, ``/guilds/{id}/roles``,
``/guilds/{id}/members/{bot}``): View Channel, Send Messages, Embed Links, Attach Files and Read
Message History always; Create Public Threads and Send Messages in Threads for ``thread``; Pin
Messages for ``pin``; for ``mention=`` a role that exists and that the bot may ping (mentionable,
or Mention Everyone); for ``publish``, that the channel is an announcement channel (type 5)."""

from __future__ import annotations

from typing import Any

import aiohttp

from adapters.discord.invite import Permission
from adapters.discord.lib import discord
from adapters.discord.settings import TOKEN, DiscordSettings
from adapters.discord.tree import intents
from bot.platform import Checkup, Problem, Subscribed

ADMINISTRATOR = 1 << 3
MANAGE_MESSAGES = 1 << 13
MENTION_EVERYONE = 1 << 17
ANNOUNCEMENT = 5  # the channel type that publishes (``adapters.discord.announce``)
ALWAYS = (
    Permission.VIEW_CHANNEL,
    Permission.SEND_MESSAGES,
    Permission.EMBED_LINKS,
    Permission.ATTACH_FILES,
    Permission.READ_MESSAGE_HISTORY,
)
THREADS = (Permission.CREATE_PUBLIC_THREADS, Permission.SEND_MESSAGES_IN_THREADS)
REINVITE = "invite it again (tallybot invite --client-id ID prints the link)"
FAILURES = (discord.DiscordException, aiohttp.ClientError, OSError, TimeoutError)


def words(permission: Permission) -> str:
    """``EMBED_LINKS`` -> ``Embed Links``, as Discord's settings name it."""
    return (permission.name or "").replace("_", " ").title()


def computed(
    guild: dict[str, Any],
    roles: list[dict[str, Any]],
    member: dict[str, Any],
    channel: dict[str, Any],
    me: int,
) -> int:
    """The bot's permissions in ``channel``: the server owner and Administrator have all; else
    @everyone's and its roles' permissions, then the channel's overwrites for @everyone, for its
    roles (allows after denies) and for the bot itself."""
    everything = (1 << 53) - 1
    if int(guild.get("owner_id") or 0) == me:
        return everything
    by_id = {int(r["id"]): int(r.get("permissions") or 0) for r in roles}
    guild_id = int(guild["id"])
    mine = {int(r) for r in member.get("roles") or []}
    perms = by_id.get(guild_id, 0)
    for role in mine:
        perms |= by_id.get(role, 0)
    if perms & ADMINISTRATOR:
        return everything
    overwrites = {
        (int(o["type"]), int(o["id"])): o for o in channel.get("permission_overwrites") or []
    }
    base = overwrites.get((0, guild_id))
    if base is not None:
        perms = (perms & ~int(base["deny"])) | int(base["allow"])
    allow = deny = 0
    for role in mine:
        o = overwrites.get((0, role))
        if o is not None:
            allow, deny = allow | int(o["allow"]), deny | int(o["deny"])
    perms = (perms & ~deny) | allow
    own = overwrites.get((1, me))
    if own is not None:
        perms = (perms & ~int(own["deny"])) | int(own["allow"])
    return perms


def intent_problems(
    flags: discord.ApplicationFlags, wanted: discord.Intents | None = None
) -> list[Problem]:
    """Each privileged intent the bot asks for (``wanted``, default: what the adapter connects
    with) that the application does not have on."""
    wanted = wanted if wanted is not None else intents()
    members = flags.gateway_guild_members or flags.gateway_guild_members_limited
    presences = flags.gateway_presence or flags.gateway_presence_limited
    content = flags.gateway_message_content or flags.gateway_message_content_limited
    asked = (
        ("Server Members", wanted.members, members),
        ("Presence", wanted.presences, presences),
        ("Message Content", wanted.message_content, content),
    )
    missing = [name for name, want, on in asked if want and not on]
    return [
        Problem(
            "discord",
            f"the {name} intent is off for the application",
            f"turn on {name} Intent (Developer Portal > Bot > Privileged Gateway Intents)",
        )
        for name in missing
    ]


async def check(settings: DiscordSettings, checkup: Checkup) -> list[Problem]:
    token = checkup.secrets.get(TOKEN)
    if token is None:  # preflight refuses this before; kept for a direct call
        return [Problem("discord", f"{TOKEN} is not set", f"export {TOKEN}=...")]
    saved = discord.http.Route.BASE
    discord.http.Route.BASE = settings.api_base.rstrip("/")
    client = discord.Client(intents=intents())
    try:
        try:
            await client.login(token.reveal())
        except discord.LoginFailure:
            return [
                Problem(
                    "discord",
                    f"Discord refused {TOKEN}",
                    "copy the bot's token from the Developer Portal (Bot > Reset Token)",
                )
            ]
        except FAILURES as exc:
            return [Problem("discord", f"cannot log in: {exc}", "check api_base and the network")]
        assert client.user is not None
        problems = intent_problems(client.application_flags)
        guilds: dict[int, tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | None] = {}
        for sub in checkup.channels:
            problems += await _channel(client, client.user.id, sub, guilds)
        return problems
    finally:
        await client.close()
        discord.http.Route.BASE = saved


async def _channel(
    client: discord.Client,
    me: int,
    sub: Subscribed,
    guilds: dict[int, tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | None],
) -> list[Problem]:
    where = str(sub.channel)
    http = client.http
    try:
        channel: dict[str, Any] = dict(await http.get_channel(int(sub.channel.channel)))
    except ValueError:
        return [Problem(where, "not a Discord channel id", "subscribe the channel again")]
    except discord.NotFound:
        return [Problem(where, "the channel no longer exists", "subscribe another channel")]
    except discord.Forbidden:
        return [
            Problem(
                where,
                "the bot cannot see the channel (Missing Access)",
                "give the bot View Channel there, or invite it to the server again "
                "(tallybot invite)",
            )
        ]
    except FAILURES as exc:
        return [Problem(where, f"cannot read the channel: {exc}", "check the network")]
    guild_id = int(channel.get("guild_id") or sub.channel.workspace)
    if guild_id not in guilds:
        try:
            guild = dict(await http.get_guild(guild_id))
            roles = [dict(r) for r in await http.get_roles(guild_id)]
            member = dict(await http.get_member(guild_id, me))
            guilds[guild_id] = (guild, roles, member)
        except FAILURES:
            guilds[guild_id] = None
    known = guilds[guild_id]
    if known is None:
        return [Problem(where, "the bot is not in the channel's server", REINVITE)]
    guild, roles, member = known
    perms = computed(guild, roles, member, channel, me)
    name = channel.get("name", "")
    needed = list(ALWAYS) + (list(THREADS) if sub.threads else [])
    problems = [
        Problem(where, f"the bot lacks {words(p)}", f"give the bot {words(p)} in #{name}")
        for p in needed
        if not perms & p
    ]
    if sub.pins and not perms & (Permission.PIN_MESSAGES | MANAGE_MESSAGES):
        problems.append(
            Problem(
                where,
                "the bot lacks Pin Messages (a subscription pins)",
                f"give the bot Pin Messages in #{name}",
            )
        )
    if any(w.publish for w in sub.wants) and channel.get("type") != ANNOUNCEMENT:
        problems.append(
            Problem(
                where,
                "the channel is not an announcement channel (a subscription publishes)",
                f"make #{name} an announcement channel, or subscribe again without publish",
            )
        )
    by_id = {str(r["id"]): r for r in roles}
    for role_id in sorted(sub.mentions):
        role = by_id.get(role_id)
        if role is None:
            problems.append(
                Problem(
                    where,
                    f"the role {role_id} to ping no longer exists",
                    "subscribe again with mention=@a-role that exists",
                )
            )
        elif not role.get("mentionable") and not perms & MENTION_EVERYONE:
            problems.append(
                Problem(
                    where,
                    f"the bot may not ping @{role.get('name')}",
                    "make the role mentionable, or give the bot Mention @everyone, "
                    "@here, and All Roles there",
                )
            )
    return problems
