"""REST handlers for users, channels, messages, guilds and application commands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import payloads
from .limits import (
    is_empty_message,
    resolve_mentions,
    validate_commands,
    validate_message,
)
from .models import (
    ATTACH_FILES,
    FLAG_COMPONENTS_V2,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    JSON,
    READ_MESSAGE_HISTORY,
    SEND_MESSAGES,
    VIEW_CHANNEL,
    Channel,
    Guild,
    RecordedAttachment,
    RecordedMessage,
)
from .router import ApiError, Ctx, Reply, Route, Upload, form_error

if TYPE_CHECKING:
    from .server import FakeDiscord

CHANNEL_MESSAGE_FLAGS = FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS | FLAG_COMPONENTS_V2
MAX_GLOBAL_COMMANDS = 100


def snowflake(value: Any, field: str = "id") -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        errors = {
            field: {"_errors": [{"code": "NUMBER_TYPE_COERCE", "message": "Not a snowflake"}]}
        }
        raise ApiError(400, 50035, "Invalid Form Body", errors) from None


def unknown(kind: str, code: int) -> ApiError:
    return ApiError(404, code, f"Unknown {kind}")


def get_channel(fake: FakeDiscord, raw_id: str) -> Channel:
    chan = fake.channels.get(snowflake(raw_id, "channel_id"))
    if chan is None or chan.deleted:
        raise unknown("Channel", 10003)
    if chan.guild_id is not None and not fake.bot_permissions(chan.id) & VIEW_CHANNEL:
        raise ApiError(403, 50001, "Missing Access")
    return chan


def get_guild(fake: FakeDiscord, raw_id: str) -> Guild:
    guild = fake.guilds.get(snowflake(raw_id, "guild_id"))
    if guild is None:
        raise unknown("Guild", 10004)
    return guild


def get_message(fake: FakeDiscord, chan: Channel, raw_id: str) -> RecordedMessage:
    msg = fake._messages.get(snowflake(raw_id, "message_id"))
    if msg is None or msg.deleted or msg.channel_id != chan.id or msg.ephemeral:
        raise unknown("Message", 10008)
    return msg


def body_dict(ctx: Ctx) -> JSON:
    body = ctx.body if ctx.body is not None else {}
    if not isinstance(body, dict):
        raise ApiError(
            400, 50035, "Invalid Form Body", {"_errors": [{"code": "DICT_TYPE_CONVERT"}]}
        )
    return body


# ------------------------------------------------------------------ messages


def check_upload_size(fake: FakeDiscord, uploads: list[Upload]) -> None:
    if sum(len(u.data) for u in uploads) > fake.attachment_size_limit:
        raise ApiError(413, 40005, "Request entity too large")


def build_attachments(
    fake: FakeDiscord,
    payload: JSON,
    uploads: list[Upload],
    existing: list[RecordedAttachment] | None,
) -> list[RecordedAttachment]:
    """Discord's rules: ``attachments`` lists what to keep (by id) and describes uploads
    (id = the n of ``files[n]``); uploads it does not mention are attached too."""
    by_index = {u.index: u for u in uploads}
    used: set[int] = set()
    result: list[RecordedAttachment] = []
    kept = {a.id: a for a in existing or []}

    def new(upload: Upload, spec: JSON) -> RecordedAttachment:
        used.add(upload.index)
        return RecordedAttachment(
            fake.snowflakes.next(),
            spec.get("filename") or upload.filename,
            len(upload.data),
            upload.content_type,
            upload.data,
            spec.get("description"),
        )

    specs = payload.get("attachments")
    if specs is None:
        result.extend(existing or [])
    else:
        for i, spec in enumerate(specs):
            aid = snowflake(spec.get("id"), f"attachments.{i}.id")
            if aid in by_index and aid not in used:
                result.append(new(by_index[aid], spec))
            elif aid in kept:
                result.append(kept[aid])
            else:
                errors = {"attachments": {str(i): {"_errors": [{"code": "ATTACHMENT_NOT_FOUND"}]}}}
                raise ApiError(400, 50035, "Invalid Form Body", errors)
    result.extend(new(u, {}) for u in uploads if u.index not in used)
    return result


def new_message(
    fake: FakeDiscord,
    chan: Channel,
    payload: JSON,
    attachments: list[RecordedAttachment],
    *,
    flags: int,
    msg_type: int = 0,
    interaction_id: int | None = None,
) -> RecordedMessage:
    content = payload.get("content") or ""
    allowed = payload.get("allowed_mentions")
    guild = fake.guilds.get(chan.guild_id) if chan.guild_id is not None else None
    perms = fake.bot_permissions(chan.id)
    users, roles, everyone = resolve_mentions(content, allowed, guild, set(fake.users), perms)
    nonce = payload.get("nonce")
    return RecordedMessage(
        id=fake.snowflakes.next(),
        channel_id=chan.id,
        author_id=fake.bot_user_id,
        content=content,
        embeds=list(payload.get("embeds") or []),
        allowed_mentions=allowed,
        nonce=nonce if isinstance(nonce, (str, int)) else None,
        attachments=attachments,
        components=list(payload.get("components") or []),
        flags=flags,
        tts=bool(payload.get("tts", False)),
        created_at=fake.wall_time(),
        type=msg_type,
        mentions=users,
        mention_roles=roles,
        mention_everyone=everyone,
        message_reference=payload.get("message_reference"),
        interaction_id=interaction_id,
        webhook_id=fake.app_id if interaction_id is not None else None,
        created_clock=fake.clock(),
    )


def apply_edit(
    fake: FakeDiscord,
    msg: RecordedMessage,
    payload: JSON,
    uploads: list[Upload],
    path: list[str | int],
    *,
    mark_edited: bool = True,
) -> None:
    """Validate and apply a PATCH body to ``msg`` (only the keys it carries change)."""
    errors = validate_message(payload, path, len(uploads)).body()
    if errors is not None:
        raise form_error(errors)
    check_upload_size(fake, uploads)
    attachments = msg.attachments
    if "attachments" in payload or uploads:
        attachments = build_attachments(fake, payload, uploads, msg.attachments)
    merged: JSON = {
        "content": payload.get("content", msg.content),
        "embeds": payload.get("embeds", msg.embeds),
        "components": payload.get("components", msg.components),
    }
    if is_empty_message(merged, len(attachments)):
        raise ApiError(400, 50006, "Cannot send an empty message")
    msg.content = merged["content"] or ""
    msg.embeds = list(merged["embeds"] or [])
    msg.components = list(merged["components"] or [])
    msg.attachments = attachments
    if "flags" in payload and payload["flags"] is not None:
        toggle = int(payload["flags"]) & FLAG_SUPPRESS_EMBEDS
        msg.flags = (msg.flags & ~FLAG_SUPPRESS_EMBEDS) | toggle
    if "allowed_mentions" in payload:
        msg.allowed_mentions = payload["allowed_mentions"]
    chan = fake.channels[msg.channel_id]
    guild = fake.guilds.get(chan.guild_id) if chan.guild_id is not None else None
    users, roles, everyone = resolve_mentions(
        msg.content, msg.allowed_mentions, guild, set(fake.users), fake.bot_permissions(chan.id)
    )
    msg.mentions, msg.mention_roles, msg.mention_everyone = users, roles, everyone
    msg.edits.append(payload)
    if mark_edited:
        msg.edited_at = fake.wall_time()


def announce(fake: FakeDiscord, event: str, msg: RecordedMessage) -> None:
    """MESSAGE_CREATE/UPDATE/DELETE over the gateway (needs the GUILD_MESSAGES intent)."""
    chan = fake.channels[msg.channel_id]
    if msg.ephemeral:
        return
    intent = 1 << 9 if chan.guild_id is not None else 1 << 12
    if event == "MESSAGE_DELETE":
        data: JSON = {"id": str(msg.id), "channel_id": str(chan.id)}
        if chan.guild_id is not None:
            data["guild_id"] = str(chan.guild_id)
    else:
        data = fake.message_json(msg, gateway=True)
    fake.gateway.dispatch(event, data, chan.guild_id, intent)


async def create_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    payload = body_dict(ctx)
    if chan.guild_id is not None:
        perms = fake.bot_permissions(chan.id)
        if not perms & SEND_MESSAGES or (ctx.uploads and not perms & ATTACH_FILES):
            raise ApiError(403, 50013, "Missing Permissions")
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
        "max_concurrency": 1,
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
    chan = next((c for c in fake.channels.values() if c.recipient_id == uid), None)
    if chan is None:
        chan = Channel(fake.snowflakes.next(), None, "", 1, recipient_id=uid)
        fake.channels[chan.id] = chan
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
    Route("POST", "/users/@me/channels", create_dm),
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
