"""Updates: the queue, getUpdates long polling, and webhooks (set, delete, info, delivery).

A long poll ends when an update arrives, when its timeout has passed by the fake's clock
(re-checked every ``TICK_S`` of real time, so a test advancing an injected clock ends it
at once), when a newer getUpdates takes over (409 for the older one), or when the fake stops.
With a webhook set, updates are POSTed to it in order as they arrive; a failed delivery
stays queued until the next update or ``deliver()`` retries it. A method call in the
webhook's answer is executed like a request. ``routes`` maps the start of a public webhook URL
to where it is really served (what a TLS-terminating proxy in front of the bot does), so a bot
can set its public https URL while a test serves the route on loopback.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from .args import Args
from .core import Core
from .errors import GETUPDATES_CONFLICT, WEBHOOK_CONFLICT, ApiError, Described, bad_request
from .limits import UPDATE_RETENTION_S
from .records import WebhookDelivery
from .world import JSON

TICK_S = 0.05
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
DEFAULT_KINDS = frozenset(
    {
        "message", "edited_message", "channel_post", "edited_channel_post", "callback_query",
        "my_chat_member", "inline_query", "chosen_inline_result", "poll", "poll_answer",
    }
)  # fmt: skip
"""What a bot gets when it never chose (chat_member and reactions need asking for)."""


@dataclass
class Pending:
    update_id: int
    kind: str
    body: JSON
    queued_at: float


@dataclass
class Webhook:
    url: str
    secret_token: str | None
    allowed_updates: list[str] | None
    max_connections: int
    last_error_date: int | None = None
    last_error_message: str | None = None


class Updates:
    def __init__(self, core: Core, *, own_url: Callable[[], str], require_https: bool) -> None:
        self.core = core
        self._own_url = own_url
        self._require_https = require_https
        self.pending: list[Pending] = []
        self._ids = itertools.count(500_000_001)
        self.allowed: list[str] | None = None
        self.webhook: Webhook | None = None
        self.deliveries: list[WebhookDelivery] = []
        self.routes: dict[str, str] = {}
        """Public URL prefix -> where deliveries to it really go (see the module docstring)."""
        self._generation = 0
        self.waiting = 0
        """Long polls waiting right now."""
        self._wake = asyncio.Event()
        self._closing = False
        self._pump: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    # ------------------------------------------------------------ queue

    def push(self, kind: str, payload: JSON) -> int | None:
        """Queue an update; None when the bot's allowed_updates leave this kind out."""
        chosen = self.webhook.allowed_updates if self.webhook else self.allowed
        if kind not in (set(chosen) if chosen else DEFAULT_KINDS):
            return None
        update_id = next(self._ids)
        body = {"update_id": update_id, kind: payload}
        self.pending.append(Pending(update_id, kind, body, self.core.clock()))
        self._wakeup()
        if self.webhook is not None:
            self.start_pump()
        return update_id

    def _wakeup(self) -> None:
        self._wake.set()
        self._wake = asyncio.Event()
        self.core.notifier.notify()

    def _expire(self) -> None:
        cutoff = self.core.clock() - UPDATE_RETENTION_S
        self.pending = [u for u in self.pending if u.queued_at > cutoff]

    def _confirm(self, offset: int | None) -> None:
        if offset is None or offset == 0:
            return
        if offset < 0:
            self.pending = self.pending[offset:]
        else:
            self.pending = [u for u in self.pending if u.update_id >= offset]

    # ------------------------------------------------------------ getUpdates

    async def get_updates(self, args: Args, request: web.Request) -> list[JSON]:
        if self.webhook is not None:
            raise ApiError(409, WEBHOOK_CONFLICT)
        limit = min(100, max(1, args.integer("limit") or 100))
        timeout = max(0, args.integer("timeout") or 0)
        chosen = args.obj("allowed_updates")
        if isinstance(chosen, list):
            self.allowed = [str(k) for k in chosen] or None
        self._confirm(args.integer("offset"))
        self._generation += 1
        generation = self._generation
        self._wakeup()
        deadline = self.core.clock() + timeout
        self.waiting += 1
        self.core.notifier.notify()
        try:
            return await self._poll(generation, deadline, limit, request)
        finally:
            self.waiting -= 1

    async def _poll(
        self, generation: int, deadline: float, limit: int, request: web.Request
    ) -> list[JSON]:
        while True:
            self._expire()
            if generation != self._generation:
                raise ApiError(409, GETUPDATES_CONFLICT)
            if self.webhook is not None:
                raise ApiError(409, WEBHOOK_CONFLICT)
            gone = request.transport is None or request.transport.is_closing()
            if self.pending or self._closing or gone or self.core.clock() >= deadline:
                return [u.body for u in self.pending[:limit]]
            wake = self._wake
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TICK_S):
                    await wake.wait()

    # ------------------------------------------------------------ webhook methods

    def set_webhook(self, args: Args) -> Described:
        url = args.text("url") or ""
        if not url:
            return self.delete_webhook(args)
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if scheme not in ("http", "https") or (self._require_https and scheme != "https"):
            raise bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        secret = args.text("secret_token")
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", secret):
            raise bad_request("secret token contains unallowed characters")  # unofficial wording
        chosen = args.obj("allowed_updates")
        if args.flag("drop_pending_updates"):
            self.pending.clear()
        self.webhook = Webhook(
            url,
            secret,
            [str(k) for k in chosen] if isinstance(chosen, list) and chosen else None,
            args.integer("max_connections") or 40,
        )
        self._wakeup()
        self.start_pump()
        return Described(True, "Webhook was set")

    def delete_webhook(self, args: Args) -> Described:
        if args.flag("drop_pending_updates"):
            self.pending.clear()
        had, self.webhook = self.webhook, None
        self._wakeup()
        return Described(True, "Webhook was deleted" if had else "Webhook is already deleted")

    def get_webhook_info(self, args: Args) -> JSON:
        hook = self.webhook
        info: JSON = {
            "url": hook.url if hook else "",
            "has_custom_certificate": False,
            "pending_update_count": len(self.pending),
        }
        if hook is not None:
            info["max_connections"] = hook.max_connections
            if hook.allowed_updates:
                info["allowed_updates"] = hook.allowed_updates
            if hook.last_error_date is not None:
                info["last_error_date"] = hook.last_error_date
                info["last_error_message"] = hook.last_error_message
        return info

    # ------------------------------------------------------------ delivery

    def start_pump(self) -> None:
        if self.webhook is None or not self.pending or self._closing:
            return
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._run_pump())

    async def _run_pump(self) -> None:
        try:
            await self.deliver()
        except Exception as exc:
            self.core.bugs.append(exc)

    async def deliver(self) -> list[WebhookDelivery]:
        """POST the queued updates to the webhook in order; stop at the first failure."""
        out: list[WebhookDelivery] = []
        async with self._lock:
            while self.webhook is not None and self.pending and not self._closing:
                delivery = await self._post(self.webhook, self.pending[0])
                out.append(delivery)
                if not delivery.ok:
                    break
                if self.pending and self.pending[0].update_id == delivery.update_id:
                    self.pending.pop(0)
                self.core.notifier.notify()
        return out

    async def _post(self, hook: Webhook, update: Pending) -> WebhookDelivery:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        headers = {"Content-Type": "application/json"}
        if hook.secret_token:
            headers[SECRET_HEADER] = hook.secret_token
        delivery = WebhookDelivery(
            update.update_id, hook.url, update.body, hook.secret_token, self.core.clock()
        )
        body = json.dumps(update.body).encode()
        reply_type = ""
        try:
            async with self._session.post(
                self._target(hook.url), data=body, headers=headers
            ) as resp:
                delivery.status = resp.status
                delivery.reply = await resp.read()
                reply_type = resp.headers.get("Content-Type", "")
                if not delivery.ok:
                    delivery.error = f"Wrong response from the webhook: {resp.status} {resp.reason}"
        except (aiohttp.ClientError, TimeoutError) as exc:
            delivery.error = f"{type(exc).__name__}: {exc}"
        self.deliveries.append(delivery)
        if not delivery.ok:
            hook.last_error_date = self.core.unix_now()
            hook.last_error_message = delivery.error
        elif delivery.reply.strip():
            await self._run_reply(delivery.reply, reply_type)
        self.core.notifier.notify()
        return delivery

    def _target(self, url: str) -> str:
        for public, local in self.routes.items():
            if url.startswith(public):
                return local + url[len(public) :]
        return url

    async def _run_reply(self, body: bytes, content_type: str) -> None:
        """A method in the webhook's answer runs as a request (answered to nobody)."""
        assert self._session is not None
        url = f"{self._own_url()}/webhook-reply"
        async with self._session.post(url, data=body, headers={"Content-Type": content_type}):
            pass

    async def close(self) -> None:
        self._closing = True
        self._wakeup()
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        if self._session is not None:
            await self._session.close()
            self._session = None
