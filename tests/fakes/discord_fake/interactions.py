"""Interaction callbacks, follow-ups and @original: the interaction routes."""

from __future__ import annotations

from typing import Any

from .interaction import FakeInteraction
from .limits import is_empty_message, validate_choices, validate_message
from .messaging import (
    announce,
    apply_edit,
    body_dict,
    build_attachments,
    check_upload_size,
    new_message,
    snowflake,
)
from .modals import validate_modal
from .models import (
    FLAG_COMPONENTS_V2,
    FLAG_EPHEMERAL,
    FLAG_LOADING,
    FLAG_SUPPRESS_EMBEDS,
    FLAG_SUPPRESS_NOTIFICATIONS,
    JSON,
    RecordedCallback,
    RecordedMessage,
)
from .router import ApiError, Ctx, Reply, Route, form_error
from .state import FakeDiscord

RESPONSE_FLAGS = FLAG_EPHEMERAL | FLAG_SUPPRESS_EMBEDS | FLAG_SUPPRESS_NOTIFICATIONS
RESPONSE_FLAGS |= FLAG_COMPONENTS_V2
TOKEN_LIFETIME_S = 15 * 60
# interaction type -> callback types Discord accepts for it
ALLOWED_CALLBACKS = {1: {1}, 2: {4, 5, 9}, 3: {4, 5, 6, 7, 9}, 4: {8}, 5: {4, 5, 6, 7}}


def find(fake: FakeDiscord, interaction_id: int | None) -> FakeInteraction | None:
    if interaction_id is None:
        return None
    return next((ix for ix in fake.interactions if ix.id == interaction_id), None)


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
        errors = validate_modal(data).body()
        if errors is not None:
            raise form_error(errors)
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
