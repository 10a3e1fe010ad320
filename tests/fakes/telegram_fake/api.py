"""The HTTP side: ``/bot<token>/<method>``, failure switches, and recording every request."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.loopback.hangs import Hangs

from . import chats, messages
from .args import Args, read_args
from .core import Core
from .errors import ApiError, Described, too_many_requests
from .records import RateLimitHit, RecordedRequest
from .updates import Updates
from .world import JSON

Handler = Callable[[Core, Args], Any]
TOKEN_RE = re.compile(r"\d+:[\w-]+")
DEFAULT_DESCRIPTIONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
SIMPLE: dict[str, Handler] = {
    "getMe": chats.get_me,
    "getChat": chats.get_chat,
    "getChatMember": chats.get_chat_member,
    "getChatAdministrators": chats.get_chat_administrators,
    "setMyCommands": chats.set_my_commands,
    "getMyCommands": chats.get_my_commands,
    "deleteMyCommands": chats.delete_my_commands,
    "answerCallbackQuery": chats.answer_callback_query,
    "sendMessage": messages.send_message,
    "sendPhoto": messages.send_photo,
    "sendChatAction": messages.send_chat_action,
    "editMessageText": messages.edit_message_text,
    "editMessageCaption": messages.edit_message_caption,
    "editMessageReplyMarkup": messages.edit_message_reply_markup,
    "deleteMessage": messages.delete_message,
    "pinChatMessage": messages.pin_chat_message,
    "unpinChatMessage": messages.unpin_chat_message,
}
UPDATE_METHODS = ("getUpdates", "setWebhook", "deleteWebhook", "getWebhookInfo")
METHOD_NAMES = {name.lower(): name for name in (*SIMPLE, *UPDATE_METHODS)}


@dataclass
class FailRule:
    status: int
    description: str
    times: int
    commit: bool
    drop: bool
    retry_after: int | None
    chat: str | None = None
    """Only calls about this chat (None: any)."""


class LostAnswer(Exception):
    """Close the connection instead of answering."""


class Api:
    def __init__(self, core: Core, updates: Updates, token: str) -> None:
        self.core = core
        self.updates = updates
        self.token = token
        self._rules: dict[str, list[FailRule]] = {}
        self.hangs = Hangs()

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        description: str | None,
        times: int,
        commit: bool,
        drop: bool,
        retry_after: int | None,
        chat: str | None = None,
    ) -> None:
        name = METHOD_NAMES.get(method.lower())
        if name is None:
            raise ValueError(f"the fake does not implement {method!r}")
        if description is None:
            if status == 429:
                description = f"Too Many Requests: retry after {retry_after or 1}"
            elif status in DEFAULT_DESCRIPTIONS:
                description = DEFAULT_DESCRIPTIONS[status]
            elif not drop:
                raise ValueError(f"fail_next with status {status} needs a description")
        rule = FailRule(status, description or "", times, commit, drop, retry_after, chat)
        self._rules.setdefault(name, []).append(rule)

    def _take_rule(self, method: str, chat: str | None) -> FailRule | None:
        rules = self._rules.get(method, [])
        rule = next((r for r in rules if r.chat is None or r.chat == chat), None)
        if rule is None:
            return None
        rule.times -= 1
        if rule.times <= 0:
            rules.remove(rule)
        return rule

    # ------------------------------------------------------------ HTTP

    async def handle(self, request: web.Request) -> web.StreamResponse:
        token, raw_method = request.match_info["token"], request.match_info["method"]
        if not TOKEN_RE.fullmatch(token):
            return _respond(404, {"ok": False, "error_code": 404, "description": "Not Found"})
        if token != self.token:
            body = {"ok": False, "error_code": 401, "description": "Unauthorized"}
            return _respond(401, body)
        return await self.run(request, raw_method, None)

    async def handle_webhook_reply(self, request: web.Request) -> web.StreamResponse:
        return await self.run(request, None, "WEBHOOK-REPLY")

    async def run(
        self, request: web.Request, raw_method: str | None, verb: str | None
    ) -> web.StreamResponse:
        try:
            args = await read_args(request)
        except ApiError as exc:
            return _respond(exc.code, exc.body())
        if raw_method is None:
            raw_method = args.text("method") or ""
            args.raw.pop("method", None)
        method = METHOD_NAMES.get(raw_method.lower())
        if method is None:
            body = {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
            return _respond(404, body)
        await self.hangs.wait(args.text("chat_id"))
        record = RecordedRequest(
            method=method,
            args=args.normalized(),
            http_verb=verb or request.method,
            content_type=request.content_type,
            time=self.core.clock(),
            status=0,
            response={},
        )
        try:
            status, body = await self._answer(method, args, request, record)
        except LostAnswer:
            record.lost = True
            self._record(record)
            if request.transport is not None:
                request.transport.close()
            raise web.HTTPInternalServerError() from None
        record.status, record.response = status, body
        self._record(record)
        return _respond(status, body)

    async def _answer(
        self, method: str, args: Args, request: web.Request, record: RecordedRequest
    ) -> tuple[int, JSON]:
        rule = self._take_rule(method, args.text("chat_id"))
        if rule is not None and not rule.commit:
            record.executed = False
            return self._failure(rule, method, args, record)
        try:
            result = await self._call(method, args, request)
        except ApiError as exc:
            status, body = exc.code, exc.body()
        except Exception as exc:
            self.core.bugs.append(exc)
            status = 500
            body = {"ok": False, "error_code": 500, "description": "Internal Server Error"}
        else:
            status, body = 200, {"ok": True, "result": result}
            if isinstance(result, Described):
                body = {"ok": True, "result": result.result, "description": result.description}
        if rule is not None:
            record.status, record.response = status, body
            return self._failure(rule, method, args, record)
        return status, body

    async def _call(self, method: str, args: Args, request: web.Request) -> Any:
        if method == "getUpdates":
            return await self.updates.get_updates(args, request)
        if method == "setWebhook":
            return self.updates.set_webhook(args)
        if method == "deleteWebhook":
            return self.updates.delete_webhook(args)
        if method == "getWebhookInfo":
            return self.updates.get_webhook_info(args)
        result = SIMPLE[method](self.core, args)
        return await result if inspect.isawaitable(result) else result

    def _failure(
        self, rule: FailRule, method: str, args: Args, record: RecordedRequest
    ) -> tuple[int, JSON]:
        if rule.drop:
            raise LostAnswer()
        if rule.status == 429:
            retry_after = rule.retry_after if rule.retry_after is not None else 1
            error = too_many_requests(retry_after)
            chat = record.chat_id if isinstance(record.chat_id, int) else None
            hit = RateLimitHit(method, chat, "injected", float(retry_after), retry_after,
                               self.core.clock())  # fmt: skip
            self.core.rate_limited.append(hit)
            return 429, error.body()
        return rule.status, ApiError(rule.status, rule.description).body()

    def _record(self, record: RecordedRequest) -> None:
        self.core.requests.append(record)
        self.core.notifier.notify()


def _respond(status: int, body: JSON) -> web.Response:
    headers = {}
    retry_after = body.get("parameters", {}).get("retry_after")
    if status == 429 and isinstance(retry_after, int) and retry_after > 0:
        headers["Retry-After"] = str(retry_after)
    return web.Response(
        body=json.dumps(body).encode(),
        status=status,
        content_type="application/json",
        headers=headers,
    )
