"""Interactions: injecting them over the gateway, callbacks, follow-ups and @original."""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any

from .limits import is_empty_message, permissions_for, validate_choices, validate_message
from .models import (
    FLAG_COMPONENTS_V2,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    JSON,
    Guild,
    RecordedCallback,
    RecordedMessage,
)
from .payloads import channel as channel_payload
from .payloads import member as member_payload
from .payloads import role as role_payload
from .payloads import user as user_payload
from .rest import (
    announce,
    apply_edit,
    body_dict,
    build_attachments,
    check_upload_size,
    new_message,
    snowflake,
)
from .router import ApiError, Ctx, Reply, Route, form_error

if TYPE_CHECKING:
    from .server import FakeDiscord

RESPONSE_FLAGS = FLAG_EPHEMERAL | FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS
RESPONSE_FLAGS |= FLAG_COMPONENTS_V2
TOKEN_LIFETIME_S = 15 * 60
# interaction type -> callback types Discord accepts for it
ALLOWED_CALLBACKS = {1: {1}, 2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}


class FakeInteraction:
    """Handle on one injected interaction and everything the bot did with it."""

    def __init__(
        self,
        fake: FakeDiscord,
        *,
        type: int,
        guild_id: int,
        channel_id: int,
        user_id: int,
        name: str,
        component_message_id: int | None = None,
    ) -> None:
        self._fake = fake
        self.id = fake.snowflakes.next()
        self.token = "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48)
        self.type = type
        self.guild_id = guild_id
        self.channel_id = channel_id
        self.user_id = user_id
        self.name = name
        self.component_message_id = component_message_id
        self.payload: JSON = {}
        self.injected_at = fake.clock()
        self.callbacks: list[RecordedCallback] = []  # every attempt, accepted or not
        self.original: RecordedMessage | None = None
        self.followups: list[RecordedMessage] = []
        self.edits: list[JSON] = []  # PATCH bodies sent to @original
        self.choices: list[JSON] | None = None  # autocomplete answer
        self.modal: JSON | None = None
        self.acknowledged = False

    @property
    def response(self) -> RecordedCallback | None:
        """The accepted callback, if any."""
        return next((c for c in self.callbacks if c.status < 300), None)

    async def wait_response(self, timeout: float = 5) -> RecordedCallback:  # noqa: ASYNC109
        """Wait for the first callback attempt (accepted or refused) and return it."""
        await self._fake.wait_for(lambda: bool(self.callbacks), timeout)
        return self.callbacks[0]

    def metadata(self) -> JSON:
        out: JSON = {
            "id": str(self.id),
            "type": self.type,
            "user": user_payload(self._fake.users[self.user_id]),
            "authorizing_integration_owners": {"0": str(self.guild_id)},
        }
        if self.type in (2, 4):
            out["name"] = self.name
            out["command_type"] = 1
        if self.original is not None:
            out["original_response_message_id"] = str(self.original.id)
        if self.component_message_id is not None:
            out["interacted_message_id"] = str(self.component_message_id)
        return out


def find(fake: FakeDiscord, interaction_id: int | None) -> FakeInteraction | None:
    if interaction_id is None:
        return None
    return next((ix for ix in fake.interactions if ix.id == interaction_id), None)


# ------------------------------------------------------------------ injecting


def _find_command(fake: FakeDiscord, guild_id: int, name: str) -> JSON | None:
    for scope in (guild_id, None):
        for cmd in fake.registered_commands.get(scope, []):
            if cmd["name"] == name and cmd.get("type", 1) == 1:
                return cmd
    return None


def _normalize(
    schema: list[JSON] | None, given: list[dict[str, Any]], focused: str | None
) -> list[JSON]:
    out: list[JSON] = []
    names = set()
    for opt in given:
        o = dict(opt)
        name = o.get("name")
        if not isinstance(name, str):
            raise ValueError(f"option without a name: {opt!r}")
        names.add(name)
        spec = None
        if schema is not None:
            spec = next((s for s in schema if s["name"] == name), None)
            if spec is None:
                raise ValueError(f"option {name!r} is not in the registered command")
        if "type" not in o:
            if spec is None:
                raise ValueError(f"option {name!r} needs a 'type' (command not registered)")
            o["type"] = spec["type"]
        if o["type"] in (6, 7, 8, 9):
            o["value"] = str(o["value"])
        if name == focused:
            o["focused"] = True
            o["value"] = str(o.get("value", ""))
        out.append(o)
    if focused is not None and focused not in names:
        raise ValueError(f"focused option {focused!r} is not among the options")
    if schema is not None and focused is None:
        missing = [s["name"] for s in schema if s.get("required") and s["name"] not in names]
        if missing:
            raise ValueError(f"required options missing: {missing}")
    return out


def _resolved(fake: FakeDiscord, guild: Guild, channel_id: int, options: list[JSON]) -> JSON:
    resolved: JSON = {}
    chan = fake.channels[channel_id]
    for opt in options:
        kind, value = opt["type"], opt.get("value")
        if kind not in (6, 7, 8, 9) or value is None:
            continue
        oid = int(value)
        if kind in (6, 9) and oid in fake.users:
            resolved.setdefault("users", {})[str(oid)] = user_payload(fake.users[oid])
            member = guild.members.get(oid)
            if member is not None:
                perms = permissions_for(guild, oid, chan)
                data = member_payload(member, fake.users[oid], with_user=False, permissions=perms)
                resolved.setdefault("members", {})[str(oid)] = data
        elif kind in (8, 9) and oid in guild.roles:
            resolved.setdefault("roles", {})[str(oid)] = role_payload(guild.roles[oid])
        elif kind == 7 and oid in fake.channels:
            target = fake.channels[oid]
            data = {**channel_payload(target), "permissions": str(fake.bot_permissions(oid))}
            resolved.setdefault("channels", {})[str(oid)] = data
    return resolved


def _base_payload(fake: FakeDiscord, ix: FakeInteraction) -> JSON:
    guild = fake.guilds[ix.guild_id]
    chan = fake.channels[ix.channel_id]
    member = guild.members[ix.user_id]
    perms = permissions_for(guild, ix.user_id, chan)
    return {
        "id": str(ix.id),
        "application_id": str(fake.app_id),
        "type": ix.type,
        "guild_id": str(guild.id),
        "guild": {"id": str(guild.id), "locale": "en-US", "features": []},
        "channel_id": str(chan.id),
        "channel": channel_payload(chan),
        "member": member_payload(member, fake.users[ix.user_id], permissions=perms),
        "token": ix.token,
        "version": 1,
        "app_permissions": str(fake.bot_permissions(chan.id)),
        "locale": "en-US",
        "guild_locale": "en-US",
        "entitlements": [],
        "authorizing_integration_owners": {"0": str(guild.id)},
        "context": 0,
        "attachment_size_limit": fake.attachment_size_limit,
    }


def _check_where(fake: FakeDiscord, guild_id: int, channel_id: int, user_id: int) -> None:
    guild = fake.guilds.get(guild_id)
    if guild is None:
        raise ValueError(f"unknown guild {guild_id}")
    chan = fake.channels.get(channel_id)
    if chan is None or chan.deleted or chan.guild_id != guild_id:
        raise ValueError(f"channel {channel_id} is not a live channel of guild {guild_id}")
    if user_id not in guild.members:
        raise ValueError(f"user {user_id} is not a member of guild {guild_id}: add_member first")
    if not fake.gateway.has_live_session(guild_id):
        raise RuntimeError("no connected gateway session receives this guild's events")


async def _send(fake: FakeDiscord, ix: FakeInteraction) -> FakeInteraction:
    fake.interactions.append(ix)
    ix.injected_at = fake.clock()
    fake.gateway.dispatch("INTERACTION_CREATE", ix.payload, ix.guild_id, None)
    await fake.gateway.flush()
    return ix


async def inject_command(
    fake: FakeDiscord,
    guild_id: int,
    channel_id: int,
    user_id: int,
    name: str,
    options: list[dict[str, Any]],
    *,
    subcommand: str | None,
    focused: str | None,
    allow_unregistered: bool,
) -> FakeInteraction:
    _check_where(fake, guild_id, channel_id, user_id)
    cmd = _find_command(fake, guild_id, name)
    if cmd is None and not allow_unregistered:
        raise LookupError(f"/{name} is not registered (global or in guild {guild_id})")
    path = subcommand.split() if subcommand else []
    schema: list[JSON] | None = cmd.get("options", []) if cmd is not None else None
    for part in path:
        if schema is None:
            break
        node = next((s for s in schema if s["name"] == part and s["type"] in (1, 2)), None)
        if node is None:
            raise ValueError(f"/{name} has no subcommand {part!r}")
        schema = node.get("options", [])
    leaf = _normalize(schema, options, focused)
    wrapped = leaf
    for depth, part in reversed(list(enumerate(path))):
        kind = 1 if depth == len(path) - 1 else 2
        wrapped = [{"name": part, "type": kind, "options": wrapped}]

    ix = FakeInteraction(
        fake,
        type=2 if focused is None else 4,
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        name=name,
    )
    data: JSON = {
        "id": cmd["id"] if cmd is not None else str(fake.snowflakes.next()),
        "name": name,
        "type": 1,
        "options": wrapped,
    }
    if cmd is not None and "guild_id" in cmd:
        data["guild_id"] = cmd["guild_id"]
    resolved = _resolved(fake, fake.guilds[guild_id], channel_id, leaf)
    if resolved:
        data["resolved"] = resolved
    ix.payload = {**_base_payload(fake, ix), "data": data}
    return await _send(fake, ix)


async def inject_component(
    fake: FakeDiscord,
    guild_id: int,
    channel_id: int,
    user_id: int,
    message_id: int,
    custom_id: str,
    component_type: int,
    values: list[str] | None,
) -> FakeInteraction:
    _check_where(fake, guild_id, channel_id, user_id)
    msg = fake._messages.get(message_id)
    if msg is None or msg.deleted or msg.channel_id != channel_id:
        raise ValueError(f"message {message_id} is not in channel {channel_id}")
    ix = FakeInteraction(
        fake,
        type=3,
        guild_id=guild_id,
        channel_id=channel_id,
        user_id=user_id,
        name=custom_id,
        component_message_id=message_id,
    )
    data: JSON = {"custom_id": custom_id, "component_type": component_type}
    if values is not None:
        data["values"] = values
    ix.payload = {**_base_payload(fake, ix), "data": data, "message": fake.message_json(msg)}
    return await _send(fake, ix)


# ------------------------------------------------------------------- callback


def _interaction_message(
    fake: FakeDiscord, ix: FakeInteraction, payload: JSON, ctx: Ctx, flags: int
) -> RecordedMessage:
    check_upload_size(fake, ctx.uploads)
    attachments = build_attachments(fake, payload, ctx.uploads, None)
    if is_empty_message(payload, len(attachments)):
        raise ApiError(400, 50006, "Cannot send an empty message")
    chan = fake.channels[ix.channel_id]
    kind = 20 if ix.type == 2 else 0
    msg = new_message(
        fake, chan, payload, attachments, flags=flags, msg_type=kind, interaction_id=ix.id
    )
    fake.store_message(msg)
    announce(fake, "MESSAGE_CREATE", msg)
    return msg


def _respond(fake: FakeDiscord, ix: FakeInteraction, ctx: Ctx, rtype: Any, data: Any) -> None:
    if ix.acknowledged:
        raise ApiError(400, 40060, "Interaction has already been acknowledged.")
    if fake.clock() - ix.injected_at > fake.interaction_deadline_s:
        raise ApiError(404, 10062, "Unknown interaction")
    if rtype not in ALLOWED_CALLBACKS.get(ix.type, set()):
        err = {"type": {"_errors": [{"code": "INTERACTION_RESPONSE_TYPE_INVALID"}]}}
        raise ApiError(400, 50035, "Invalid Form Body", err)
    data = data if isinstance(data, dict) else {}
    flags = int(data.get("flags") or 0)
    if rtype in (4, 7):
        errors = validate_message(data, ["data"], len(ctx.uploads)).body()
        if errors is not None:
            raise form_error(errors)
    if rtype == 4:
        ix.original = _interaction_message(fake, ix, data, ctx, flags & RESPONSE_FLAGS)
    elif rtype == 5:
        loading = FLAG_LOADING | (flags & FLAG_EPHEMERAL)
        chan = fake.channels[ix.channel_id]
        kind = 20 if ix.type == 2 else 0
        ix.original = new_message(
            fake, chan, {}, [], flags=loading, msg_type=kind, interaction_id=ix.id
        )
        fake.store_message(ix.original)
        announce(fake, "MESSAGE_CREATE", ix.original)
    elif rtype in (6, 7):
        if ix.component_message_id is None:
            err = {"type": {"_errors": [{"code": "INTERACTION_RESPONSE_TYPE_INVALID"}]}}
            raise ApiError(400, 50035, "Invalid Form Body", err)
        ix.original = fake.message(ix.component_message_id)
        if rtype == 7:
            apply_edit(fake, ix.original, data, ctx.uploads, ["data"])
            announce(fake, "MESSAGE_UPDATE", ix.original)
    elif rtype == 8:
        errors = validate_choices(data).body()
        if errors is not None:
            raise form_error(errors)
        ix.choices = list(data["choices"])
    elif rtype == 9:
        ix.modal = data
    ix.acknowledged = True


async def callback(fake: FakeDiscord, ctx: Ctx) -> Reply:
    ix = find(fake, snowflake(ctx.params["interaction_id"], "interaction_id"))
    if ix is None or ix.token != ctx.params["token"]:
        raise ApiError(404, 10062, "Unknown interaction")
    body = body_dict(ctx)
    rtype, data = body.get("type"), body.get("data")
    if not isinstance(rtype, int):
        err = {"type": {"_errors": [{"code": "BASE_TYPE_REQUIRED", "message": "required"}]}}
        raise ApiError(400, 50035, "Invalid Form Body", err)
    flags = int(data.get("flags") or 0) if isinstance(data, dict) else 0
    now = fake.clock()
    try:
        _respond(fake, ix, ctx, rtype, data)
    except ApiError as err:
        record = RecordedCallback(rtype, data, flags, now, err.status, err.body["code"])
        ix.callbacks.append(record)
        raise
    ix.callbacks.append(
        RecordedCallback(rtype, data, flags, now, 200 if ctx.query_flag("with_response") else 204)
    )
    if not ctx.query_flag("with_response"):
        return Reply(204)
    info: JSON = {"id": str(ix.id), "type": ix.type}
    out: JSON = {"interaction": info}
    if ix.original is not None and rtype in (4, 5, 7):
        info["response_message_id"] = str(ix.original.id)
        info["response_message_loading"] = rtype == 5
        info["response_message_ephemeral"] = ix.original.ephemeral
        out["resource"] = {"type": rtype, "message": fake.message_json(ix.original)}
    return Reply(200, out)


# -------------------------------------------------------------- webhooks


def _webhook_interaction(fake: FakeDiscord, ctx: Ctx) -> FakeInteraction:
    if snowflake(ctx.params["app_id"], "webhook_id") != fake.app_id:
        raise ApiError(404, 10015, "Unknown Webhook")
    ix = next((i for i in fake.interactions if i.token == ctx.params["token"]), None)
    if ix is None or fake.clock() - ix.injected_at > TOKEN_LIFETIME_S:
        raise ApiError(401, 50027, "Invalid Webhook Token")
    if not ix.acknowledged:
        raise ApiError(404, 10015, "Unknown Webhook")
    return ix


def _webhook_message(fake: FakeDiscord, ix: FakeInteraction, raw_id: str) -> RecordedMessage:
    if raw_id == "@original":
        msg = ix.original
    else:
        mid = snowflake(raw_id, "message_id")
        ours = [m for m in [ix.original, *ix.followups] if m is not None]
        msg = next((m for m in ours if m.id == mid), None)
    if msg is None or msg.deleted:
        raise ApiError(404, 10008, "Unknown Message")
    return msg


async def followup(fake: FakeDiscord, ctx: Ctx) -> Reply:
    ix = _webhook_interaction(fake, ctx)
    payload = body_dict(ctx)
    errors = validate_message(payload, [], len(ctx.uploads)).body()
    if errors is not None:
        raise form_error(errors)
    original = ix.original
    if original is not None and original.flags & FLAG_LOADING and not original.deleted:
        # The first follow-up after a deferral fills in the "thinking" message.
        apply_edit(fake, original, payload, ctx.uploads, [], mark_edited=False)
        original.flags &= ~FLAG_LOADING
        announce(fake, "MESSAGE_UPDATE", original)
        msg = original
    else:
        flags = int(payload.get("flags") or 0) & RESPONSE_FLAGS
        msg = _interaction_message(fake, ix, payload, ctx, flags)
    ix.followups.append(msg)
    if ctx.query_flag("wait"):
        return Reply(200, fake.message_json(msg))
    return Reply(204)


async def edit_webhook_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    ix = _webhook_interaction(fake, ctx)
    msg = _webhook_message(fake, ix, ctx.params["message_id"])
    payload = body_dict(ctx)
    loading = bool(msg.flags & FLAG_LOADING)
    apply_edit(fake, msg, payload, ctx.uploads, [], mark_edited=not loading)
    msg.flags &= ~FLAG_LOADING
    if ctx.params["message_id"] == "@original" or msg is ix.original:
        ix.edits.append(payload)
    announce(fake, "MESSAGE_UPDATE", msg)
    return Reply(200, fake.message_json(msg))


async def get_webhook_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    ix = _webhook_interaction(fake, ctx)
    return Reply(200, fake.message_json(_webhook_message(fake, ix, ctx.params["message_id"])))


async def delete_webhook_message(fake: FakeDiscord, ctx: Ctx) -> Reply:
    ix = _webhook_interaction(fake, ctx)
    msg = _webhook_message(fake, ix, ctx.params["message_id"])
    msg.deleted = True
    announce(fake, "MESSAGE_DELETE", msg)
    return Reply(204)


WEBHOOK = "/webhooks/{app_id}/{token}"
ROUTES: list[Route] = [
    Route(
        "POST",
        "/interactions/{interaction_id}/{token}/callback",
        callback,
        auth=False,
        major="interaction_id,token",
    ),
    Route("POST", WEBHOOK, followup, auth=False, major="app_id,token", limits="messages"),
    Route(
        "GET",
        WEBHOOK + "/messages/{message_id}",
        get_webhook_message,
        auth=False,
        major="app_id,token",
    ),
    Route(
        "PATCH",
        WEBHOOK + "/messages/{message_id}",
        edit_webhook_message,
        auth=False,
        major="app_id,token",
        limits="messages",
    ),
    Route(
        "DELETE",
        WEBHOOK + "/messages/{message_id}",
        delete_webhook_message,
        auth=False,
        major="app_id,token",
    ),
]
