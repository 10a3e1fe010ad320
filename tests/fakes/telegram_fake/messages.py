"""Sending, editing, deleting and pinning messages."""

from __future__ import annotations

from typing import Any

from . import payloads, photos
from .args import Args
from .core import Core
from .errors import NOT_MODIFIED, bad_request
from .limits import CAPTION_LIMIT, DELETE_WINDOW_S, TEXT_LIMIT
from .world import JSON, Chat, Revision, StoredMessage


def send_message(core: Core, args: Args) -> JSON:
    chat = core.world.chat_for_bot(args.chat_id(), post=True)
    text, entities = core.formatted(args, "text", "entities", TEXT_LIMIT, "message is too long")
    if not text.strip():
        raise bad_request("message text is empty")
    markup = core.reply_markup(args)
    _check_reply(core, chat, args)
    core.admit("send", chat, "sendMessage")
    message = core.store(
        chat,
        core.bot.id,
        "sendMessage",
        text=text,
        entities=entities,
        reply_markup=markup,
        parse_mode=args.text("parse_mode"),
        disable_notification=args.flag("disable_notification"),
    )
    return payloads.message(message, core.world)


CHAT_ACTIONS = frozenset(
    {
        "typing", "upload_photo", "record_video", "upload_video", "record_voice",
        "upload_voice", "upload_document", "choose_sticker", "find_location",
        "record_video_note", "upload_video_note",
    }
)  # fmt: skip


def send_chat_action(core: Core, args: Args) -> bool:
    """sendChatAction: shows "typing..." in the chat; posts nothing. Refused like a message
    to a chat the bot may not write to (a user who never started the bot, or blocked it)."""
    core.world.chat_for_bot(args.chat_id(), post=True)
    if args.text("action") not in CHAT_ACTIONS:
        raise bad_request("wrong parameter action in request")
    return True


def send_photo(core: Core, args: Args) -> JSON:
    chat = core.world.chat_for_bot(args.chat_id(), post=True)
    photo = photos.resolve(core, args.file("photo"))
    caption, entities = core.formatted(
        args, "caption", "caption_entities", CAPTION_LIMIT, "message caption is too long"
    )
    markup = core.reply_markup(args)
    _check_reply(core, chat, args)
    core.admit("send", chat, "sendPhoto")
    message = core.store(
        chat,
        core.bot.id,
        "sendPhoto",
        caption=caption or None,
        caption_entities=entities if caption else [],
        photo=photo.sizes,
        photo_sha256=photo.sha256,
        reply_markup=markup,
        parse_mode=args.text("parse_mode"),
        disable_notification=args.flag("disable_notification"),
    )
    return payloads.message(message, core.world)


def edit_message_text(core: Core, args: Args) -> JSON:
    chat, message = _editable(core, args)
    if message.text is None:
        raise bad_request("there is no text in the message to edit")
    text, entities = core.formatted(args, "text", "entities", TEXT_LIMIT, "message is too long")
    if not text.strip():
        raise bad_request("message text is empty")
    markup = core.reply_markup(args)
    return _apply(
        core, chat, message, "editMessageText", text=text, entities=entities, reply_markup=markup
    )


def edit_message_caption(core: Core, args: Args) -> JSON:
    chat, message = _editable(core, args)
    if message.photo is None:
        raise bad_request("there is no caption in the message to edit")  # unofficial wording
    caption, entities = core.formatted(
        args, "caption", "caption_entities", CAPTION_LIMIT, "message caption is too long"
    )
    markup = core.reply_markup(args)
    return _apply(
        core,
        chat,
        message,
        "editMessageCaption",
        caption=caption or None,
        caption_entities=entities,
        reply_markup=markup,
    )


def edit_message_reply_markup(core: Core, args: Args) -> JSON:
    chat, message = _editable(core, args)
    return _apply(
        core, chat, message, "editMessageReplyMarkup", reply_markup=core.reply_markup(args)
    )


def delete_message(core: Core, args: Args) -> bool:
    chat = core.world.chat_for_bot(args.chat_id())
    message = core.world.message(chat, _message_id(args), "message to delete not found")
    own = core.is_own(message)
    world = core.world
    allowed = (
        (own and (chat.type != "channel" or world.bot_can(chat, "can_post_messages")))
        or chat.type == "private"
        or (chat.type == "group" and world.bot_status(chat) == "administrator")
        or world.bot_can(chat, "can_delete_messages")
    )
    if not allowed:
        raise bad_request("message can't be deleted")
    if core.clock() - message.sent_at > DELETE_WINDOW_S:
        raise bad_request("message can't be deleted for everyone")
    message.deleted = True
    if message.message_id in chat.pinned:
        chat.pinned.remove(message.message_id)
    core.notifier.notify()
    return True


def pin_chat_message(core: Core, args: Args) -> bool:
    chat = core.world.chat_for_bot(args.chat_id())
    message = core.world.message(chat, _message_id(args), "message to pin not found")
    _check_pin_rights(core, chat)
    if message.message_id in chat.pinned:
        chat.pinned.remove(message.message_id)
    chat.pinned.append(message.message_id)
    core.notifier.notify()
    return True


def unpin_chat_message(core: Core, args: Args) -> bool:
    chat = core.world.chat_for_bot(args.chat_id())
    _check_pin_rights(core, chat)
    message_id = args.integer("message_id")
    if message_id is None:
        if chat.pinned:
            chat.pinned.pop()
    else:
        core.world.message(chat, message_id, "message to unpin not found")  # unofficial wording
        if message_id in chat.pinned:
            chat.pinned.remove(message_id)
    core.notifier.notify()
    return True


# ---------------------------------------------------------------- helpers


def _message_id(args: Args) -> int:
    value = args.integer("message_id", missing="message identifier is not specified")
    assert value is not None
    if value <= 0:
        raise bad_request("MESSAGE_ID_INVALID")
    return value


def _editable(core: Core, args: Args) -> tuple[Chat, StoredMessage]:
    if args.has("inline_message_id"):
        raise bad_request("MESSAGE_ID_INVALID")  # the fake has no inline messages
    chat = core.world.chat_for_bot(args.chat_id())
    message = core.world.message(chat, _message_id(args), "message to edit not found")
    channel_editor = chat.type == "channel" and core.world.bot_can(chat, "can_edit_messages")
    if not core.is_own(message) and not (channel_editor and message.sender_id is None):
        raise bad_request("message can't be edited")
    return chat, message


def _apply(core: Core, chat: Chat, message: StoredMessage, method: str, **changes: Any) -> JSON:
    before = message.content
    revision = Revision(
        message.text,
        message.entities,
        message.caption,
        message.caption_entities,
        message.reply_markup,
        core.clock(),
    )
    after = {
        "text": message.text,
        "entities": message.entities,
        "caption": message.caption,
        "caption_entities": message.caption_entities,
        "reply_markup": message.reply_markup,
        **changes,
    }
    key = ("text", "entities", "caption", "caption_entities", "reply_markup")
    if tuple(after[k] for k in key) == before:
        raise bad_request(NOT_MODIFIED.removeprefix("Bad Request: "))
    core.admit("edit", chat, method)
    for name, value in changes.items():
        setattr(message, name, value)
    message.revisions.append(revision)
    message.edit_date = core.unix_now()
    core.notifier.notify()
    return payloads.message(message, core.world)


def _check_reply(core: Core, chat: Chat, args: Args) -> None:
    params = args.obj("reply_parameters")
    target = params.get("message_id") if isinstance(params, dict) else None
    target = target if target is not None else args.integer("reply_to_message_id")
    if target is None:
        return
    allow = isinstance(params, dict) and bool(params.get("allow_sending_without_reply"))
    allow = allow or args.flag("allow_sending_without_reply")
    found = chat.messages.get(int(target))
    if (found is None or found.deleted) and not allow:
        raise bad_request("message to be replied not found")


def _check_pin_rights(core: Core, chat: Chat) -> None:
    if chat.type == "private":
        return
    right = "can_edit_messages" if chat.type == "channel" else "can_pin_messages"
    if not core.world.bot_can(chat, right):
        raise bad_request("not enough rights to manage pinned messages in the chat")
