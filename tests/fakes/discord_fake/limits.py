"""Discord's payload limits, rate-limit windows and permission arithmetic."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.loopback.limits import FixedWindow

from .models import (
    ADMINISTRATOR,
    ALL_PERMISSIONS,
    JSON,
    MENTION_EVERYONE,
    Channel,
    Guild,
)

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_EMBED_TOTAL = 6000
MAX_FIELDS = 25
MAX_ATTACHMENTS = 10
MAX_NONCE = 25
MAX_ACTION_ROWS = 5
MAX_ROW_ITEMS = 5
MAX_CHOICES = 25
EMBED_TEXT_LIMITS = {"title": 256, "description": 4096}
ALLOWED_PARSE = ("users", "roles", "everyone")


class FormErrors:
    """Collects errors in Discord's nested ``errors`` shape for code 50035."""

    def __init__(self) -> None:
        self.errors: JSON = {}

    def add(self, path: list[str | int], code: str, message: str) -> None:
        node = self.errors
        for part in path:
            node = node.setdefault(str(part), {})
        node.setdefault("_errors", []).append({"code": code, "message": message})

    def too_long(self, path: list[str | int], limit: int) -> None:
        self.add(path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")

    def required(self, path: list[str | int]) -> None:
        self.add(path, "BASE_TYPE_REQUIRED", "This field is required")

    def body(self) -> JSON | None:
        if not self.errors:
            return None
        return {"message": "Invalid Form Body", "code": 50035, "errors": self.errors}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _check_text(
    errors: FormErrors, obj: JSON, key: str, limit: int, path: list[str | int], *, required: bool
) -> int:
    value = obj.get(key)
    if value is None or value == "":
        if required:
            errors.required([*path, key])
        return 0
    if not isinstance(value, str):
        errors.add([*path, key], "STRING_TYPE_CONVERT", "Could not interpret value as string.")
        return 0
    if len(value) > limit:
        errors.too_long([*path, key], limit)
    return len(value)


def _check_embed(errors: FormErrors, embed: Any, path: list[str | int]) -> int:
    if not isinstance(embed, dict):
        errors.add(path, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return 0
    total = 0
    for key, limit in EMBED_TEXT_LIMITS.items():
        total += _check_text(errors, embed, key, limit, path, required=False)
    for key, limit in (("footer", 2048), ("author", 256)):
        part = embed.get(key)
        if isinstance(part, dict):
            text_key = "text" if key == "footer" else "name"
            total += _check_text(errors, part, text_key, limit, [*path, key], required=True)
    fields = embed.get("fields") or []
    if len(fields) > MAX_FIELDS:
        errors.too_long([*path, "fields"], MAX_FIELDS)
    for i, f in enumerate(fields):
        fpath: list[str | int] = [*path, "fields", i]
        total += _check_text(errors, f, "name", 256, fpath, required=True)
        total += _check_text(errors, f, "value", 1024, fpath, required=True)
    return total


def _check_allowed_mentions(errors: FormErrors, am: Any, path: list[str | int]) -> None:
    if am is None:
        return
    if not isinstance(am, dict):
        errors.add(path, "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType")
        return
    parse = am.get("parse", [])
    for i, p in enumerate(parse):
        if p not in ALLOWED_PARSE:
            errors.add([*path, "parse", i], "ENUM_TYPE_COERCE", f'Value "{p}" is not valid.')
    for kind in ("users", "roles"):
        ids = am.get(kind) or []
        if len(ids) > 100:
            errors.too_long([*path, kind], 100)
        if ids and kind in parse:
            errors.add(
                path,
                "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                f'parse:["{kind}"] and {kind}: {ids} are mutually exclusive.',
            )


def _check_components(errors: FormErrors, rows: Any, path: list[str | int]) -> None:
    if not isinstance(rows, list):
        return
    if len(rows) > MAX_ACTION_ROWS:
        errors.too_long(path, MAX_ACTION_ROWS)
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("type") != 1:
            continue  # components v2 layouts are not checked further
        items = row.get("components") or []
        if len(items) > MAX_ROW_ITEMS:
            errors.too_long([*path, i, "components"], MAX_ROW_ITEMS)
        for j, item in enumerate(items):
            ipath: list[str | int] = [*path, i, "components", j]
            if isinstance(item, dict):
                _check_text(errors, item, "custom_id", 100, ipath, required=False)
                _check_text(errors, item, "label", 80, ipath, required=False)


def validate_message(payload: JSON, path: list[str | int], n_files: int = 0) -> FormErrors:
    """Check the fields of a message body (create, edit, webhook, interaction data)."""
    errors = FormErrors()
    content = payload.get("content")
    if content is not None:
        if not isinstance(content, str):
            errors.add([*path, "content"], "STRING_TYPE_CONVERT", "Could not interpret as string.")
        elif len(content) > MAX_CONTENT:
            errors.too_long([*path, "content"], MAX_CONTENT)
    embeds = payload.get("embeds")
    if embeds is not None:
        if len(embeds) > MAX_EMBEDS:
            errors.too_long([*path, "embeds"], MAX_EMBEDS)
        total = sum(_check_embed(errors, e, [*path, "embeds", i]) for i, e in enumerate(embeds))
        if total > MAX_EMBED_TOTAL:
            errors.add(
                [*path, "embeds"],
                "MAX_EMBED_SIZE_EXCEEDED",
                f"Embed size exceeds maximum size of {MAX_EMBED_TOTAL}",
            )
    nonce = payload.get("nonce")
    if isinstance(nonce, str) and len(nonce) > MAX_NONCE:
        errors.too_long([*path, "nonce"], MAX_NONCE)
    _check_allowed_mentions(errors, payload.get("allowed_mentions"), [*path, "allowed_mentions"])
    _check_components(errors, payload.get("components"), [*path, "components"])
    attachments = payload.get("attachments") or []
    if max(len(attachments), n_files) > MAX_ATTACHMENTS:
        errors.too_long([*path, "attachments"], MAX_ATTACHMENTS)
    return errors


def is_empty_message(payload: JSON, n_attachments: int) -> bool:
    return not (
        payload.get("content")
        or payload.get("embeds")
        or n_attachments
        or payload.get("sticker_ids")
        or payload.get("components")
        or payload.get("poll")
    )


def validate_choices(data: Any) -> FormErrors:
    errors = FormErrors()
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list):
        errors.required(["data", "choices"])
        return errors
    if len(choices) > MAX_CHOICES:
        errors.too_long(["data", "choices"], MAX_CHOICES)
    for i, c in enumerate(choices):
        _check_text(errors, c, "name", 100, ["data", "choices", i], required=True)
        if isinstance(c.get("value"), str) and len(c["value"]) > 100:
            errors.too_long(["data", "choices", i, "value"], 100)
    return errors


_COMMAND_NAME = re.compile(r"^[-_\w]{1,32}$")


def validate_commands(commands: Any) -> FormErrors:
    """Validate a bulk-overwrite body the way Discord does for chat-input commands."""
    errors = FormErrors()
    if not isinstance(commands, list):
        errors.add([], "LIST_TYPE_CONVERT", "Only iterables may be used in a ListType")
        return errors
    seen: set[tuple[int, str]] = set()
    for i, cmd in enumerate(commands):
        ctype = cmd.get("type", 1)
        name = cmd.get("name", "")
        if (ctype, name) in seen:
            errors.add([i, "name"], "APPLICATION_COMMANDS_DUPLICATE_NAME", "Duplicate name")
        seen.add((ctype, name))
        if ctype == 1:
            _check_command_options(errors, cmd, [i])
    return errors


def _check_command_options(errors: FormErrors, node: JSON, path: list[str | int]) -> None:
    name = node.get("name", "")
    if not isinstance(name, str) or not _COMMAND_NAME.match(name) or name != name.lower():
        errors.add([*path, "name"], "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
    description = node.get("description")
    if not isinstance(description, str) or not 1 <= len(description) <= 100:
        errors.add([*path, "description"], "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100.")
    options = node.get("options") or []
    if len(options) > 25:
        errors.too_long([*path, "options"], 25)
    seen_optional = False
    for j, opt in enumerate(options):
        opath: list[str | int] = [*path, "options", j]
        if opt.get("type") in (1, 2):
            _check_command_options(errors, opt, opath)
            continue
        _check_command_options(errors, {**opt, "options": []}, opath)
        if opt.get("required"):
            if seen_optional:
                errors.add(
                    opath,
                    "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                    "Required options must be placed before non-required options",
                )
        else:
            seen_optional = True
        if len(opt.get("choices") or []) > MAX_CHOICES:
            errors.too_long([*opath, "choices"], MAX_CHOICES)


@dataclass
class RateLimits:
    global_limit: int
    global_period: float
    buckets: dict[tuple[str, str], FixedWindow] = field(default_factory=dict)
    global_window: FixedWindow | None = None

    def __post_init__(self) -> None:
        self.global_window = FixedWindow(self.global_limit, self.global_period)

    def bucket(self, bucket_hash: str, major: str, limit: int, period: float) -> FixedWindow:
        key = (bucket_hash, major)
        window = self.buckets.get(key)
        if window is None:
            window = self.buckets[key] = FixedWindow(limit, period)
        return window


def permissions_for(guild: Guild, user_id: int, channel: Channel | None) -> int:
    """Discord's permission computation: owner, roles, administrator, then overwrites."""
    if guild.owner_id == user_id:
        return ALL_PERMISSIONS
    member = guild.members.get(user_id)
    if member is None:
        return 0
    everyone = guild.roles[guild.id]
    perms = everyone.permissions | member.extra_permissions
    for role_id in member.roles:
        role = guild.roles.get(role_id)
        if role is not None:
            perms |= role.permissions
    if perms & ADMINISTRATOR:
        return ALL_PERMISSIONS
    if channel is None:
        return perms
    by_id = {(o.type, o.id): o for o in channel.overwrites}
    base = by_id.get((0, guild.id))
    if base is not None:
        perms = (perms & ~base.deny) | base.allow
    allow = deny = 0
    for role_id in member.roles:
        o = by_id.get((0, role_id))
        if o is not None:
            allow |= o.allow
            deny |= o.deny
    perms = (perms & ~deny) | allow
    own = by_id.get((1, user_id))
    if own is not None:
        perms = (perms & ~own.deny) | own.allow
    return perms


_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


def resolve_mentions(
    content: str,
    allowed: JSON | None,
    guild: Guild | None,
    known_users: set[int],
    author_perms: int,
) -> tuple[list[int], list[int], bool]:
    """Which users/roles/@everyone a message really pings, honouring allowed_mentions."""
    if allowed is None:
        parse = set(ALLOWED_PARSE)
        users_ok: set[int] = set()
        roles_ok: set[int] = set()
    else:
        parse = set(allowed.get("parse", []))
        users_ok = {int(u) for u in allowed.get("users") or []}
        roles_ok = {int(r) for r in allowed.get("roles") or []}
    users: list[int] = []
    for match in _USER_MENTION.finditer(content):
        uid = int(match.group(1))
        if uid in known_users and ("users" in parse or uid in users_ok) and uid not in users:
            users.append(uid)
    roles: list[int] = []
    for match in _ROLE_MENTION.finditer(content):
        rid = int(match.group(1))
        role = guild.roles.get(rid) if guild is not None else None
        if role is None or rid in roles or not ("roles" in parse or rid in roles_ok):
            continue
        if role.mentionable or author_perms & MENTION_EVERYONE:
            roles.append(rid)
    everyone = (
        "everyone" in parse
        and ("@everyone" in content or "@here" in content)
        and bool(author_perms & MENTION_EVERYONE)
    )
    return users, roles, everyone
