"""Reading a Bot API request's parameters: query string, urlencoded, JSON or multipart.

Form and query values are strings and nested objects arrive JSON-encoded; JSON bodies carry
them typed. ``Args`` gives both the same typed view, resolves ``attach://<name>`` file
references, and keeps a normalised copy for the record.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .errors import bad_request

JSON_FIELDS = frozenset(
    {
        "reply_markup", "entities", "caption_entities", "commands", "scope",
        "allowed_updates", "reply_parameters", "link_preview_options",
    }
)  # fmt: skip
INT_FIELDS = frozenset(
    {
        "message_id", "user_id", "offset", "limit", "timeout", "max_connections",
        "cache_time", "message_thread_id", "reply_to_message_id",
    }
)  # fmt: skip
BOOL_FIELDS = frozenset(
    {
        "disable_notification", "drop_pending_updates", "show_alert", "protect_content",
        "disable_web_page_preview", "allow_sending_without_reply", "show_caption_above_media",
        "has_spoiler",
    }
)  # fmt: skip


@dataclass
class Upload:
    filename: str
    data: bytes

    def summary(self) -> dict[str, Any]:
        return {
            "filename": self.filename,
            "size": len(self.data),
            "sha256": hashlib.sha256(self.data).hexdigest(),
        }


class Args:
    def __init__(self, raw: Mapping[str, Any], files: Mapping[str, Upload]) -> None:
        self.raw = dict(raw)
        self.files = dict(files)

    def has(self, name: str) -> bool:
        return name in self.raw or name in self.files

    def text(self, name: str) -> str | None:
        value = self.raw.get(name)
        if value is None:
            return None
        return value if isinstance(value, str) else json.dumps(value)

    def integer(self, name: str, *, missing: str | None = None) -> int | None:
        value = self.raw.get(name)
        if value is None or value == "":
            if missing is not None:
                raise bad_request(missing)
            return None
        if isinstance(value, bool):
            raise bad_request(f"invalid {name} specified")
        if isinstance(value, int):
            return value
        try:
            return int(str(value))
        except ValueError:
            raise bad_request(f"invalid {name} specified") from None

    def chat_id(self) -> int | str:
        value = self.raw.get("chat_id")
        if value is None or value == "":
            raise bad_request("chat_id is empty")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        text = str(value)
        if text.lstrip("-").isdigit():
            return int(text)
        if text.startswith("@"):
            return text
        raise bad_request("chat not found")

    def flag(self, name: str) -> bool:
        value = self.raw.get(name)
        if isinstance(value, str):
            return value.lower() in ("true", "1")
        return bool(value)

    def obj(self, name: str) -> Any:
        """A JSON-serialised parameter (reply_markup, entities, commands, scope, ...)."""
        value = self.raw.get(name)
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {name} JSON object") from None

    def file(self, name: str) -> Upload | str | None:
        """An uploaded file (directly or through attach://), or a file_id / URL string."""
        if name in self.files:
            return self.files[name]
        value = self.raw.get(name)
        if isinstance(value, str) and value.startswith("attach://"):
            upload = self.files.get(value.removeprefix("attach://"))
            if upload is None:
                raise bad_request(f"file of {name} not found in the request")  # unofficial
            return upload
        return value if isinstance(value, str) and value else None

    def normalized(self) -> dict[str, Any]:
        """Typed parameters for the record; uploads as {"filename", "size", "sha256"}."""
        out: dict[str, Any] = {}
        for name, value in self.raw.items():
            try:
                if name == "chat_id":
                    out[name] = self.chat_id()
                elif name in INT_FIELDS:
                    out[name] = self.integer(name)
                elif name in JSON_FIELDS:
                    out[name] = self.obj(name)
                elif name in BOOL_FIELDS:
                    out[name] = self.flag(name)
                else:
                    out[name] = value
            except Exception:
                out[name] = value
        for name in self.files:
            upload = self.file(name)
            if isinstance(upload, Upload):
                target = next((k for k, v in self.raw.items() if v == f"attach://{name}"), name)
                out[target] = upload.summary()
        return out


async def read_args(request: web.Request) -> Args:
    raw: dict[str, Any] = dict(request.query)
    files: dict[str, Upload] = {}
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            try:
                body = json.loads(await request.read() or b"{}")
            except ValueError:
                raise bad_request("can't parse JSON encoded request body") from None
            if not isinstance(body, dict):
                raise bad_request("JSON object expected in the request body")  # unofficial
            raw.update(body)
        elif request.content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
            form = await request.post()
            for name, value in form.items():
                if isinstance(value, web.FileField):
                    files[name] = Upload(value.filename or name, value.file.read())
                else:
                    raw[name] = value
    return Args(raw, files)
