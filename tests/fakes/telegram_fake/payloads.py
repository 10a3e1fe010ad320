"""Bot API objects (User, Chat, ChatFullInfo, Message, ChatMember) built from the world."""

from __future__ import annotations

from dataclasses import replace

from .world import ADMIN_RIGHTS, ANONYMOUS_ADMIN_ID, JSON, Chat, Status, StoredMessage, User, World

RESTRICTED_FALSE = (
    "can_send_messages", "can_send_audios", "can_send_documents", "can_send_photos",
    "can_send_videos", "can_send_video_notes", "can_send_voice_notes", "can_send_polls",
    "can_send_other_messages", "can_add_web_page_previews", "can_react_to_messages",
    "can_edit_tag", "can_change_info", "can_invite_users", "can_pin_messages",
    "can_manage_topics",
)  # fmt: skip
ANONYMOUS_ADMIN: JSON = {
    "id": ANONYMOUS_ADMIN_ID,
    "is_bot": True,
    "first_name": "Group",
    "username": "GroupAnonymousBot",
}


def user(u: User) -> JSON:
    out: JSON = {"id": u.id, "is_bot": u.is_bot, "first_name": u.first_name}
    if u.username:
        out["username"] = u.username
    if u.language_code:
        out["language_code"] = u.language_code
    return out


def me(bot: User, *, can_read_all_group_messages: bool) -> JSON:
    return {
        **user(bot),
        "can_join_groups": True,
        "can_read_all_group_messages": can_read_all_group_messages,
        "supports_inline_queries": False,
        "can_connect_to_business": False,
        "has_main_web_app": False,
    }


def chat(c: Chat, world: World) -> JSON:
    out: JSON = {"id": c.id, "type": c.type}
    if c.type == "private":
        peer = world.users[c.id]
        out["first_name"] = peer.first_name
        if peer.username:
            out["username"] = peer.username
        return out
    out["title"] = c.title or ""
    if c.username:
        out["username"] = c.username
    return out


def chat_full(c: Chat, world: World) -> JSON:
    """getChat's ChatFullInfo (pinned_message: the most recent pin)."""
    out: JSON = {
        **chat(c, world),
        "accent_color_id": 0,
        "max_reaction_count": 11,
        "accepted_gift_types": {
            "unlimited_gifts": False,
            "limited_gifts": False,
            "unique_gifts": False,
            "premium_subscription": False,
            "gifts_from_channels": False,
        },
    }
    live_pins = [i for i in c.pinned if i in c.messages and not c.messages[i].deleted]
    if live_pins:
        out["pinned_message"] = message(c.messages[live_pins[-1]], world)
    return out


def message(m: StoredMessage, world: World) -> JSON:
    c = world.chats[m.chat_id]
    out: JSON = {"message_id": m.message_id, "date": m.date, "chat": chat(c, world)}
    if m.sender_id is None or c.type == "channel":
        out["sender_chat"] = chat(c, world)
    elif m.anonymous:
        out["from"] = dict(ANONYMOUS_ADMIN)
        out["sender_chat"] = chat(c, world)
    else:
        out["from"] = user(world.users[m.sender_id])
    if m.text is not None:
        out["text"] = m.text
        if m.entities:
            out["entities"] = m.entities
    if m.photo is not None:
        out["photo"] = m.photo
        if m.caption:
            out["caption"] = m.caption
            if m.caption_entities:
                out["caption_entities"] = m.caption_entities
    replied = c.messages.get(m.reply_to) if m.reply_to is not None else None
    if replied is not None and not replied.deleted:
        out["reply_to_message"] = message(replace(replied, reply_to=None), world)
    if m.reply_markup is not None:
        out["reply_markup"] = m.reply_markup
    if m.edit_date is not None:
        out["edit_date"] = m.edit_date
    if m.migrate_to_chat_id is not None:
        out["migrate_to_chat_id"] = m.migrate_to_chat_id
    if m.migrate_from_chat_id is not None:
        out["migrate_from_chat_id"] = m.migrate_from_chat_id
    return out


def member(c: Chat, u: User, status: Status) -> JSON:
    out: JSON = {"status": status, "user": user(u)}
    if status == "creator":
        out["is_anonymous"] = False
    elif status == "administrator":
        rights = c.rights.get(u.id, frozenset())
        out.update(can_be_edited=False, is_anonymous=False)
        out.update({right: right in rights for right in sorted(ADMIN_RIGHTS)})
        if c.type != "channel":
            for channel_only in ("can_post_messages", "can_edit_messages"):
                out.pop(channel_only)
    elif status == "restricted":
        out.update(is_member=True, until_date=0)
        out.update(dict.fromkeys(RESTRICTED_FALSE, False))
    elif status == "kicked":
        out["until_date"] = 0
    return out
