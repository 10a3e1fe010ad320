"""The bot, chats and members, the command menu, and callback query answers."""

from __future__ import annotations

import re
from typing import Any

from . import payloads
from .args import Args
from .core import Core
from .errors import QUERY_TOO_OLD, ApiError, bad_request
from .limits import CALLBACK_ANSWER_TEXT_LIMIT, MAX_COMMANDS
from .world import JSON, Status

SCOPES = frozenset(
    {
        "default", "all_private_chats", "all_group_chats", "all_chat_administrators",
        "chat", "chat_administrators", "chat_member",
    }
)  # fmt: skip
COMMAND_RE = re.compile(r"[a-z0-9_]{1,32}")


def get_me(core: Core, args: Args) -> JSON:
    return payloads.me(core.bot, can_read_all_group_messages=not core.privacy_mode)


def get_chat(core: Core, args: Args) -> JSON:
    chat = core.world.chat_for_bot(args.chat_id())
    return payloads.chat_full(chat, core.world)


def get_chat_member(core: Core, args: Args) -> JSON:
    chat = core.world.chat_for_bot(args.chat_id())
    user_id = args.integer("user_id", missing="invalid user_id specified")
    assert user_id is not None
    user = core.world.user(user_id)
    if chat.type == "private":
        status: Status = "member" if user.id in (chat.id, core.bot.id) else "left"
        return payloads.member(chat, user, status)
    return payloads.member(chat, user, chat.members.get(user.id, "left"))


def get_chat_administrators(core: Core, args: Args) -> list[JSON]:
    chat = core.world.chat_for_bot(args.chat_id())
    if chat.type == "private":
        raise bad_request("there are no administrators in the private chat")
    return [
        payloads.member(chat, core.world.users[user_id], status)
        for user_id, status in chat.members.items()
        if status in ("creator", "administrator")
    ]


def _scope_key(core: Core, args: Args) -> tuple[str, int | None, int | None, str]:
    scope = args.obj("scope") or {"type": "default"}
    language = args.text("language_code") or ""
    if not isinstance(scope, dict) or scope.get("type") not in SCOPES:
        raise bad_request("unsupported bot command scope type")  # unofficial wording
    kind = str(scope["type"])
    chat_id = user_id = None
    if kind.startswith("chat"):
        chat_id = core.world.find_chat(_ref(scope.get("chat_id"))).id
    if kind == "chat_member":
        user_id = core.world.user(int(scope.get("user_id") or 0)).id
    if language and not re.fullmatch(r"[a-z]{2}", language):
        raise bad_request("invalid language code specified")  # unofficial wording
    return kind, chat_id, user_id, language


def _ref(value: Any) -> int | str:
    if isinstance(value, int) or (isinstance(value, str) and value.startswith("@")):
        return value
    try:
        return int(str(value))
    except ValueError:
        raise bad_request("chat not found") from None


def set_my_commands(core: Core, args: Args) -> bool:
    commands = args.obj("commands")
    if not isinstance(commands, list):
        raise bad_request("can't parse commands JSON object")
    if len(commands) > MAX_COMMANDS:
        raise bad_request("too many commands specified")  # unofficial wording
    clean: list[JSON] = []
    for entry in commands:
        if not isinstance(entry, dict):
            raise bad_request("can't parse BotCommand")
        command = str(entry.get("command", "")).removeprefix("/")
        description = str(entry.get("description", "")).strip()
        if not COMMAND_RE.fullmatch(command):
            raise bad_request("BOT_COMMAND_INVALID")
        if not 1 <= len(description) <= 256:
            raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")  # unofficial wording
        clean.append({"command": command, "description": description})
    key = _scope_key(core, args)
    if clean:
        core.commands[key] = clean
    else:
        core.commands.pop(key, None)
    return True


def get_my_commands(core: Core, args: Args) -> list[JSON]:
    return [dict(c) for c in core.commands.get(_scope_key(core, args), [])]


def delete_my_commands(core: Core, args: Args) -> bool:
    core.commands.pop(_scope_key(core, args), None)
    return True


def answer_callback_query(core: Core, args: Args) -> bool:
    query = core.callback_queries.get(args.text("callback_query_id") or "")
    too_late = query is not None and (
        core.clock() - query.sent_at > core.callback_answer_window_s or query.answers
    )
    if query is None or too_late:
        raise ApiError(400, QUERY_TOO_OLD)
    text = args.text("text") or ""
    if len(text) > CALLBACK_ANSWER_TEXT_LIMIT:
        raise bad_request("MESSAGE_TOO_LONG")  # unofficial wording
    query.answers.append({"text": text, "show_alert": args.flag("show_alert")})
    core.notifier.notify()
    return True
