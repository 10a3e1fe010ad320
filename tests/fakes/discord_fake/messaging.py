"""What the routes share: looking up the objects a path names, and building, editing and
announcing messages (REST sends and interaction responses alike)."""

from __future__ import annotations

from typing import Any

from .limits import (
    is_empty_message,
    resolve_mentions,
    validate_message,
)
from .models import (
    FLAG_SUPPRESS_EMBEDS,
    JSON,
    VIEW_CHANNEL,
    Channel,
    Guild,
    RecordedAttachment,
    RecordedMessage,
)
from .router import ApiError, Ctx, Upload, form_error
from .state import FakeDiscord


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
