"""Full Discord JSON objects built from the fake's state (ids as strings, like Discord)."""

from __future__ import annotations

from collections.abc import Callable

from .models import (
    JSON,
    Channel,
    Guild,
    Member,
    RecordedAttachment,
    RecordedMessage,
    Role,
    User,
    iso,
)


def user(u: User) -> JSON:
    out: JSON = {
        "id": str(u.id),
        "username": u.name,
        "discriminator": "0",
        "global_name": u.global_name,
        "avatar": None,
        "banner": None,
        "accent_color": None,
        "avatar_decoration_data": None,
        "public_flags": 0,
        "flags": 0,
    }
    if u.bot:
        out["bot"] = True
    return out


def me(u: User) -> JSON:
    return {**user(u), "verified": True, "mfa_enabled": False, "locale": "en-US", "email": None}


def role(r: Role) -> JSON:
    out: JSON = {
        "id": str(r.id),
        "name": r.name,
        "description": None,
        "permissions": str(r.permissions),
        "position": r.position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "managed": r.managed,
        "mentionable": r.mentionable,
        "icon": None,
        "unicode_emoji": None,
        "flags": 0,
    }
    if r.bot_id is not None:
        out["tags"] = {"bot_id": str(r.bot_id)}
    return out


def member(m: Member, u: User, *, with_user: bool = True, permissions: int | None = None) -> JSON:
    out: JSON = {
        "roles": [str(r) for r in m.roles],
        "nick": m.nick,
        "avatar": None,
        "banner": None,
        "joined_at": m.joined_at,
        "premium_since": None,
        "deaf": False,
        "mute": False,
        "pending": False,
        "flags": 0,
        "communication_disabled_until": None,
    }
    if with_user:
        out["user"] = user(u)
    if permissions is not None:
        out["permissions"] = str(permissions)
    return out


def channel(
    c: Channel, *, with_guild_id: bool = True, recipients: list[JSON] | None = None
) -> JSON:
    last = str(c.last_message_id) if c.last_message_id is not None else None
    if c.type == 1:
        return {
            "id": str(c.id),
            "type": 1,
            "last_message_id": last,
            "flags": 0,
            "recipients": recipients or [],
        }
    out: JSON = {
        "id": str(c.id),
        "type": c.type,
        "name": c.name,
        "position": c.position,
        "permission_overwrites": [
            {"id": str(o.id), "type": o.type, "allow": str(o.allow), "deny": str(o.deny)}
            for o in c.overwrites
        ],
        "parent_id": str(c.parent_id) if c.parent_id is not None else None,
        "topic": None,
        "nsfw": False,
        "last_message_id": last,
        "rate_limit_per_user": 0,
        "flags": 0,
    }
    if with_guild_id and c.guild_id is not None:
        out["guild_id"] = str(c.guild_id)
    return out


def guild(g: Guild, *, approximate: bool = False) -> JSON:
    out: JSON = {
        "id": str(g.id),
        "name": g.name,
        "icon": None,
        "icon_hash": None,
        "splash": None,
        "discovery_splash": None,
        "banner": None,
        "description": None,
        "owner_id": str(g.owner_id),
        "region": None,
        "afk_channel_id": None,
        "afk_timeout": 300,
        "widget_enabled": False,
        "widget_channel_id": None,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "roles": [role(r) for r in g.roles.values()],
        "emojis": [],
        "stickers": [],
        "features": [],
        "mfa_level": 0,
        "application_id": None,
        "system_channel_id": None,
        "system_channel_flags": 0,
        "rules_channel_id": None,
        "public_updates_channel_id": None,
        "safety_alerts_channel_id": None,
        "max_presences": None,
        "max_members": 500000,
        "vanity_url_code": None,
        "premium_tier": 0,
        "premium_subscription_count": 0,
        "preferred_locale": "en-US",
        "max_video_channel_users": 25,
        "max_stage_video_channel_users": 50,
        "nsfw_level": 0,
        "premium_progress_bar_enabled": False,
        "incidents_data": None,
    }
    if approximate:
        out["approximate_member_count"] = len(g.members)
        out["approximate_presence_count"] = 0
    return out


def attachment(a: RecordedAttachment, url: str) -> JSON:
    out: JSON = {
        "id": str(a.id),
        "filename": a.filename,
        "size": a.size,
        "url": url,
        "proxy_url": url,
        "content_type": a.content_type,
    }
    if a.description is not None:
        out["description"] = a.description
    return out


def message(
    m: RecordedMessage,
    *,
    author: JSON,
    mentions: list[JSON],
    attachment_url: Callable[[int, RecordedAttachment], str],
    interaction_metadata: JSON | None = None,
    application_id: int | None = None,
) -> JSON:
    out: JSON = {
        "id": str(m.id),
        "channel_id": str(m.channel_id),
        "type": m.type,
        "content": m.content,
        "author": author,
        "attachments": [attachment(a, attachment_url(m.channel_id, a)) for a in m.attachments],
        "embeds": [{"type": "rich", **e} for e in m.embeds],
        "mentions": mentions,
        "mention_roles": [str(r) for r in m.mention_roles],
        "mention_everyone": m.mention_everyone,
        "pinned": m.pinned,
        "tts": m.tts,
        "timestamp": iso(m.created_at),
        "edited_timestamp": iso(m.edited_at) if m.edited_at is not None else None,
        "flags": m.flags,
        "components": m.components,
    }
    if m.nonce is not None:
        out["nonce"] = m.nonce
    if m.message_reference is not None:
        out["message_reference"] = m.message_reference
    if m.webhook_id is not None:
        out["webhook_id"] = str(m.webhook_id)
    if application_id is not None:
        out["application_id"] = str(application_id)
    if interaction_metadata is not None:
        out["interaction_metadata"] = interaction_metadata
    return out


def application(app_id: int, name: str, owner: JSON, bot: JSON, flags: int) -> JSON:
    return {
        "id": str(app_id),
        "name": name,
        "icon": None,
        "description": "",
        "summary": "",
        "type": None,
        "bot": bot,
        "bot_public": True,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": flags,
        "owner": owner,
        "team": None,
        "hook": True,
        "rpc_origins": [],
        "redirect_uris": [],
        "interactions_endpoint_url": None,
        "role_connections_verification_url": None,
        "tags": [],
        "approximate_guild_count": 0,
        "integration_types_config": {"0": {}},
    }


def application_flags(privileged_intents: int) -> int:
    """The *_LIMITED application flags matching the intents enabled in the portal."""
    flags = 1 << 23  # APPLICATION_COMMAND_BADGE
    for intent, flag in ((1 << 1, 1 << 15), (1 << 8, 1 << 13), (1 << 15, 1 << 19)):
        if privileged_intents & intent:
            flags |= flag
    return flags
