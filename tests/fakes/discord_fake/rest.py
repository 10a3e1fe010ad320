"""REST handlers for users, channels, messages, guilds and application commands."""

from __future__ import annotations

from . import payloads
from .limits import (
    is_empty_message,
    validate_commands,
    validate_message,
)
from .messaging import (
    announce,
    apply_edit,
    body_dict,
    build_attachments,
    check_upload_size,
    get_channel,
    get_guild,
    get_message,
    new_message,
    snowflake,
    unknown,
)
from .models import (
    ATTACH_FILES,
    EMBED_LINKS,
    FLAG_COMPONENTS_V2,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    JSON,
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    SEND_MESSAGES_IN_THREADS,
    RecordedMessage,
)
from .router import ApiError, Ctx, Reply, Route, form_error
from .state import FakeDiscord

CHANNEL_MESSAGE_FLAGS = FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS | FLAG_COMPONENTS_V2
MAX_GLOBAL_COMMANDS = 100


async def create_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    payload = body_dict(ctx)
    if chan.recipient_id is not None:
        user = fake.users[chan.recipient_id]
        if user.refuses_dms or not fake.shares_a_server(user.id):
            raise ApiError(403, 50007, "Cannot send messages to this user")
    if chan.guild_id is not None:
        perms = fake.bot_permissions(chan.id)
        send = SEND_MESSAGES_IN_THREADS if chan.parent_id is not None else SEND_MESSAGES
        if not perms & send or (ctx.uploads and not perms & ATTACH_FILES):
            raise ApiError(403, 50013, "Missing Permissions")
        if payload.get("embeds") and not perms & EMBED_LINKS:
            # Discord: embeds alone are refused; beside a text or a file, they are dropped
            if not (payload.get("content") or ctx.uploads):
                raise ApiError(403, 50013, "Missing Permissions")
            payload = {**payload, "embeds": []}
    errors = validate_message(payload, [], len(ctx.uploads)).body()
    if errors is not None:
        raise form_error(errors)
    flags = int(payload.get("flags") or 0)
    if flags & ~CHANNEL_MESSAGE_FLAGS:
        raise ApiError(400, 50035, "Invalid Form Body", {"flags": {"_errors": [{"code": "FLAGS"}]}})
    check_upload_size(fake, ctx.uploads)
    attachments = build_attachments(fake, payload, ctx.uploads, None)
    if is_empty_message(payload, len(attachments)):
        raise ApiError(400, 50006, "Cannot send an empty message")

    nonce = payload.get("nonce")
    if nonce is not None and payload.get("enforce_nonce"):
        for old in reversed(fake.messages(chan.id, include_deleted=False)):
            fresh = fake.clock() - old.created_clock <= fake.nonce_window_s
            if fresh and str(old.nonce) == str(nonce) and old.author_id == fake.bot_user_id:
                return Reply(200, fake.message_json(old))

    msg_type = 0
    ref = payload.get("message_reference")
    if isinstance(ref, dict) and ref.get("message_id") is not None:
        target = fake._messages.get(snowflake(ref["message_id"], "message_reference"))
        if target is None or target.deleted or target.channel_id != chan.id:
            if ref.get("fail_if_not_exists", True):
                errors_ref = {
                    "message_reference": {"_errors": [{"code": "REPLIES_UNKNOWN_MESSAGE"}]}
                }
                raise ApiError(400, 50035, "Invalid Form Body", errors_ref)
            payload = {**payload, "message_reference": None}
        else:
            msg_type = 19
    msg = new_message(fake, chan, payload, attachments, flags=flags, msg_type=msg_type)
    fake.store_message(msg)
    announce(fake, "MESSAGE_CREATE", msg)
    return Reply(200, fake.message_json(msg))


async def edit_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    msg = get_message(fake, chan, ctx.params["message_id"])
    if msg.author_id != fake.bot_user_id:
        raise ApiError(403, 50005, "Cannot edit a message authored by another user")
    apply_edit(fake, msg, body_dict(ctx), ctx.uploads, [])
    announce(fake, "MESSAGE_UPDATE", msg)
    return Reply(200, fake.message_json(msg))


async def delete_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    msg = get_message(fake, chan, ctx.params["message_id"])
    msg.deleted = True
    announce(fake, "MESSAGE_DELETE", msg)
    return Reply(204)


def stored_json(fake: FakeDiscord, msg: RecordedMessage) -> JSON:
    """A message as reading it back returns it: Discord keeps no nonce (only the answer to the
    create and the gateway's MESSAGE_CREATE carry it; observed, the docs mark it optional)."""
    out = fake.message_json(msg)
    out.pop("nonce", None)
    return out


async def fetch_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    return Reply(200, stored_json(fake, get_message(fake, chan, ctx.params["message_id"])))


async def list_messages(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    if chan.guild_id is not None and not fake.bot_permissions(chan.id) & READ_MESSAGE_HISTORY:
        return Reply(200, [])  # as Discord documents: no error, no messages
    query = ctx.request.query
    limit = int(query.get("limit", "50"))
    if not 1 <= limit <= 100:
        raise ApiError(400, 50035, "Invalid Form Body", {"limit": {"_errors": [{"code": "RANGE"}]}})
    msgs = fake.messages(chan.id, include_deleted=False)
    if "before" in query:
        msgs = [m for m in msgs if m.id < int(query["before"])]
    if "after" in query:
        msgs = [m for m in msgs if m.id > int(query["after"])][:limit]
    newest_first = list(reversed(msgs))[:limit]
    return Reply(200, [stored_json(fake, m) for m in newest_first])


# ---------------------------------------------------------- users, channels


async def get_me(fake: FakeDiscord, ctx: Ctx) -> Reply:
    return Reply(200, payloads.me(fake.users[fake.bot_user_id]))


async def get_application(fake: FakeDiscord, ctx: Ctx) -> Reply:
    bot = fake.users[fake.bot_user_id]
    owner = payloads.user(fake.users[fake.owner_user_id])
    flags = payloads.application_flags(fake.privileged_intents)
    return Reply(200, payloads.application(fake.app_id, bot.name, owner, payloads.user(bot), flags))


async def get_gateway(fake: FakeDiscord, ctx: Ctx) -> Reply:
    return Reply(200, {"url": fake.gateway_url})


async def get_gateway_bot(fake: FakeDiscord, ctx: Ctx) -> Reply:
    limit = {
        "total": 1000,
        "remaining": 1000 - fake.gateway.identify_count,
        "reset_after": 86_400_000,
        "max_concurrency": fake.max_concurrency,
    }
    body = {
        "url": fake.gateway_url,
        "shards": fake.recommended_shards,
        "session_start_limit": limit,
    }
    return Reply(200, body)


async def get_user(fake: FakeDiscord, ctx: Ctx) -> Reply:
    user = fake.users.get(snowflake(ctx.params["user_id"], "user_id"))
    if user is None:
        raise unknown("User", 10013)
    return Reply(200, payloads.user(user))


async def create_dm(fake: FakeDiscord, ctx: Ctx) -> Reply:
    uid = snowflake(body_dict(ctx).get("recipient_id"), "recipient_id")
    user = fake.users.get(uid)
    if user is None or uid == fake.bot_user_id:
        raise unknown("User", 10013)
    if user.refuses_dms:  # 400, not 403, since 2020 (discord-api-docs#1905)
        raise ApiError(400, 50007, "Cannot send messages to this user")
    chan = fake.channels[fake.dm_channel(uid)]
    return Reply(200, payloads.channel(chan, recipients=[payloads.user(user)]))


async def channel_info(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    recipients = None
    if chan.recipient_id is not None:
        recipients = [payloads.user(fake.users[chan.recipient_id])]
    return Reply(200, payloads.channel(chan, recipients=recipients))


# -------------------------------------------------------------------- guilds


async def guild_info(fake: FakeDiscord, ctx: Ctx) -> Reply:
    guild = get_guild(fake, ctx.params["guild_id"])
    return Reply(200, payloads.guild(guild, approximate=ctx.query_flag("with_counts")))


async def guild_member(fake: FakeDiscord, ctx: Ctx) -> Reply:
    guild = get_guild(fake, ctx.params["guild_id"])
    member = guild.members.get(snowflake(ctx.params["user_id"], "user_id"))
    if member is None:
        raise unknown("Member", 10007)
    return Reply(200, payloads.member(member, fake.users[member.user_id]))


async def guild_roles(fake: FakeDiscord, ctx: Ctx) -> Reply:
    guild = get_guild(fake, ctx.params["guild_id"])
    return Reply(200, [payloads.role(r) for r in guild.roles.values()])


async def guild_channels(fake: FakeDiscord, ctx: Ctx) -> Reply:
    guild = get_guild(fake, ctx.params["guild_id"])
    return Reply(200, [payloads.channel(fake.channels[c]) for c in guild.channels])


# ------------------------------------------------------------------ commands


def _scope(fake: FakeDiscord, ctx: Ctx) -> int | None:
    if snowflake(ctx.params["app_id"], "application_id") != fake.app_id:
        raise ApiError(403, 50001, "Missing Access")
    if "guild_id" not in ctx.params:
        return None
    guild = fake.guilds.get(snowflake(ctx.params["guild_id"], "guild_id"))
    if guild is None:
        raise ApiError(403, 50001, "Missing Access")
    return guild.id


async def put_commands(fake: FakeDiscord, ctx: Ctx) -> Reply:
    scope = _scope(fake, ctx)
    body = ctx.body if ctx.body is not None else []
    errors = validate_commands(body).body()
    if errors is not None:
        raise form_error(errors)
    if scope is None and sum(1 for c in body if c.get("type", 1) == 1) > MAX_GLOBAL_COMMANDS:
        raise ApiError(400, 30032, "Maximum number of application commands reached (100)")
    old = {(c["type"], c["name"]): c for c in fake.registered_commands.get(scope, [])}
    stored: list[JSON] = []
    for cmd in body:
        ctype = cmd.get("type", 1)
        previous = old.get((ctype, cmd["name"]))
        full: JSON = {
            "default_member_permissions": None,
            "dm_permission": True,
            "nsfw": False,
            "contexts": None,
            "integration_types": [0],
            "name_localizations": None,
            "description_localizations": None,
            **cmd,
            "id": previous["id"] if previous else str(fake.snowflakes.next()),
            "application_id": str(fake.app_id),
            "version": str(fake.snowflakes.next()),
            "type": ctype,
            "description": cmd.get("description", ""),
        }
        if scope is not None:
            full["guild_id"] = str(scope)
        stored.append(full)
    fake.registered_commands[scope] = stored
    return Reply(200, stored)


async def get_commands(fake: FakeDiscord, ctx: Ctx) -> Reply:
    return Reply(200, fake.registered_commands.get(_scope(fake, ctx), []))


MSGS = "messages"
ROUTES: list[Route] = [
    Route("GET", "/users/@me", get_me),
    Route("POST", "/users/@me/channels", create_dm, limits="dm"),
    Route("GET", "/users/{user_id}", get_user),
    Route("GET", "/oauth2/applications/@me", get_application),
    Route("GET", "/gateway", get_gateway, auth=False),
    Route("GET", "/gateway/bot", get_gateway_bot),
    Route("GET", "/channels/{channel_id}", channel_info, major="channel_id"),
    Route("GET", "/channels/{channel_id}/messages", list_messages, major="channel_id"),
    Route(
        "POST", "/channels/{channel_id}/messages", create_message, major="channel_id", limits=MSGS
    ),
    Route("GET", "/channels/{channel_id}/messages/{message_id}", fetch_message, major="channel_id"),
    Route(
        "PATCH",
        "/channels/{channel_id}/messages/{message_id}",
        edit_message,
        major="channel_id",
        limits=MSGS,
    ),
    Route(
        "DELETE",
        "/channels/{channel_id}/messages/{message_id}",
        delete_message,
        major="channel_id",
        limits=MSGS,
    ),
    Route("GET", "/guilds/{guild_id}", guild_info, major="guild_id"),
    Route("GET", "/guilds/{guild_id}/channels", guild_channels, major="guild_id"),
    Route("GET", "/guilds/{guild_id}/roles", guild_roles, major="guild_id"),
    Route("GET", "/guilds/{guild_id}/members/{user_id}", guild_member, major="guild_id"),
    Route("GET", "/applications/{app_id}/commands", get_commands),
    Route("PUT", "/applications/{app_id}/commands", put_commands),
    Route(
        "GET", "/applications/{app_id}/guilds/{guild_id}/commands", get_commands, major="guild_id"
    ),
    Route(
        "PUT", "/applications/{app_id}/guilds/{guild_id}/commands", put_commands, major="guild_id"
    ),
]
