"""HTTP mode: what Slack POSTs to an app's request URL, signed with the signing secret."""

from __future__ import annotations

import json
import time
from typing import Any, Protocol
from urllib.parse import urlencode

import aiohttp

from .interactions import signed_headers
from .records import HttpDelivery


class SignedSender(Protocol):
    """What HTTP mode reads of ``fake.FakeSlack``."""

    signing_secret: str

    def slash_command_payload(
        self, *, command: str, text: str, user_id: str, channel_id: str
    ) -> dict[str, str]: ...

    def event_payload(
        self, event: dict[str, Any], *, event_id: str | None = None
    ) -> dict[str, Any]: ...

    def signed_headers(self, body: bytes, *, timestamp: int | None = None) -> dict[str, str]: ...


class HttpMode:
    """The HTTP-mode half of ``fake.FakeSlack`` (a mixin)."""

    def signed_headers(
        self: SignedSender, body: bytes, *, timestamp: int | None = None
    ) -> dict[str, str]:
        """X-Slack-Request-Timestamp (default: now, wall clock) and X-Slack-Signature."""
        return signed_headers(self.signing_secret, body, timestamp)

    async def send_slash_command_http(
        self: SignedSender, url: str, *, command: str, text: str, user_id: str, channel_id: str
    ) -> HttpDelivery:
        """POST a signed slash command to an HTTP-mode app, as Slack would."""
        payload = self.slash_command_payload(
            command=command, text=text, user_id=user_id, channel_id=channel_id
        )
        body = urlencode(payload).encode()
        headers = self.signed_headers(body)
        return await _post(url, body, "application/x-www-form-urlencoded", headers)

    async def send_event_http(
        self: SignedSender,
        url: str,
        event: dict[str, Any],
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        event_id: str | None = None,
    ) -> HttpDelivery:
        """POST a signed Events API request; retries carry X-Slack-Retry-Num / -Reason."""
        body = json.dumps(self.event_payload(event, event_id=event_id)).encode()
        extra: dict[str, str] = {}
        if retry_attempt:
            extra = {"X-Slack-Retry-Num": str(retry_attempt), "X-Slack-Retry-Reason": retry_reason}
        return await _post(url, body, "application/json", {**self.signed_headers(body), **extra})


async def _post(url: str, body: bytes, content_type: str, signed: dict[str, str]) -> HttpDelivery:
    headers = {"Content-Type": content_type, **signed}
    timeout = aiohttp.ClientTimeout(total=10)
    started = time.monotonic()
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=body, headers=headers) as resp,
    ):
        text = await resp.text()
        return HttpDelivery(
            status=resp.status,
            body=text,
            content_type=resp.content_type,
            latency_s=time.monotonic() - started,
        )
