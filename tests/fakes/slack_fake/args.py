"""Reading a Web API call's arguments the way Slack does: token, query, body, typed values."""

from __future__ import annotations

import base64
import binascii
from decimal import Decimal, InvalidOperation
from typing import Any

from aiohttp import web

from .limits import SlackError

JsonDict = dict[str, Any]


async def read_args(request: web.Request) -> tuple[JsonDict, str | None]:
    """Merge query string and body (JSON, urlencoded or multipart) like Slack does."""
    args: JsonDict = {k: v for k, v in request.query.items() if k != "token"}
    token: str | None = None
    auth = request.headers.get("Authorization", "")
    if auth.startswith("Bearer "):
        token = auth[len("Bearer ") :].strip()
    elif auth.startswith("Basic "):  # client credentials (oauth.v2.access)
        client_id, _, client_secret = base64.b64decode(auth[6:]).decode().partition(":")
        args.update(client_id=client_id, client_secret=client_secret)
    if not request.can_read_body:
        return args, token
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError as exc:
            raise SlackError("invalid_json") from exc
        if not isinstance(body, dict):
            raise SlackError("invalid_json")
        args.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        for key, value in form.items():
            if isinstance(value, web.FileField):
                args[key] = f"<file {value.filename}>"
            elif isinstance(value, str):
                args[key] = value
            else:
                args[key] = bytes(value).decode(errors="replace")
        form_token = args.pop("token", None)
        if token is None and isinstance(form_token, str):
            token = form_token
    else:
        await request.read()
    return args, token


def ts_arg(value: Any, *, error: str) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation as exc:
        raise SlackError(error) from exc


def cursor_ts(value: Any) -> Decimal | None:
    if not value:
        return None
    try:
        decoded = base64.b64decode(str(value), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise SlackError("invalid_cursor") from exc
    if not decoded.startswith("next_ts:"):
        raise SlackError("invalid_cursor")
    return ts_arg(decoded[len("next_ts:") :], error="invalid_cursor")


def int_arg(value: Any, *, default: int) -> int:
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        raise SlackError("invalid_arguments")
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise SlackError("invalid_arguments") from exc


def truthy(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("1", "true")


def opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)
