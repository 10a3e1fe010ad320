"""What the fake records: Web API calls, messages, uploads, Socket Mode deliveries."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

MENTION = re.compile(r"<(!subteam\^|@|!)(channel|here|everyone|[A-Z0-9]+)(?:\|[^>]*)?>")
"""A mention in Slack's markup: ``<!subteam^S1>``, ``<@U1>``, ``<!channel>``, ``<!here>``..."""
ACK_DEADLINE_S = 3.0
"""Slack wants commands, actions and events acknowledged within 3 seconds."""


@dataclass
class RecordedCall:
    """One Web API request as the fake saw and answered it."""

    method: str
    args: dict[str, Any]
    token: str | None
    http_verb: str
    time: float
    """When it arrived, by the fake's clock."""
    status: int
    response: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    """Notable response headers (Retry-After)."""

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.response.get("ok"))

    @property
    def error(self) -> str | None:
        error = self.response.get("error")
        return error if isinstance(error, str) else None


@dataclass
class MessageRevision:
    text: str
    blocks: list[dict[str, Any]] | None
    metadata: dict[str, Any] | None
    time: float


@dataclass
class RecordedSlackMessage:
    """Current state of a channel message (edits applied, deletions flagged)."""

    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]] | None
    metadata: dict[str, Any] | None
    user: str
    bot_id: str | None
    thread_ts: str | None
    posted_at: float
    source: str
    """One of "chat.postMessage", "response_url", "user", "files.completeUploadExternal"."""
    edited: bool = False
    deleted: bool = False
    pinned: bool = False
    broadcast: bool = False
    """A thread reply also shown in the channel (``reply_broadcast``)."""
    revisions: list[MessageRevision] = field(default_factory=list)
    """Earlier versions, oldest first (one per chat.update)."""
    files: list[dict[str, Any]] | None = None
    """The files a file-share message shows (files.completeUploadExternal into a channel)."""

    @property
    def edit_count(self) -> int:
        return len(self.revisions)

    @property
    def pinged(self) -> list[str]:
        """Who this message notifies, as Slack documents its mentions: user groups
        (``subteam:S123`` for ``<!subteam^S123>``), users (``user:U1`` for ``<@U1>``) and
        everyone (``<!channel>``, ``<!here>``, ``<!everyone>``), in the message's ``text`` and
        in its blocks' mrkdwn (``plain_text`` notifies nobody)."""
        texts = [self.text]
        for block in self.blocks or []:
            objs = [block.get("text"), *(block.get("fields") or []), *(block.get("elements") or [])]
            texts += [o["text"] for o in objs if isinstance(o, dict) and o.get("type") == "mrkdwn"]
        found: list[str] = []
        for text in texts:
            for kind, who in MENTION.findall(text):
                name = {"!subteam^": "subteam:", "@": "user:"}.get(kind, "") + who
                if name not in found:
                    found.append(name)
        return found

    def to_api(self, *, team_id: str, app_id: str, with_metadata: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "message",
            "ts": self.ts,
            "user": self.user,
            "text": self.text,
            "team": team_id,
        }
        if self.bot_id is not None:
            out["bot_id"] = self.bot_id
            out["app_id"] = app_id
        if self.blocks is not None:
            out["blocks"] = self.blocks
        if self.thread_ts is not None:
            out["thread_ts"] = self.thread_ts
        if self.edited:
            out["edited"] = {"user": self.user, "ts": self.ts}
        if with_metadata and self.metadata is not None:
            out["metadata"] = self.metadata
        if self.files is not None:
            out["files"] = self.files
            out["upload"] = True
        return out


@dataclass
class RecordedEphemeral:
    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]] | None
    message_ts: str


@dataclass
class RecordedUpload:
    """A file completed through the v2 flow (getUploadURLExternal, upload, complete)."""

    file_id: str
    filename: str
    title: str
    length: int
    """Bytes actually received at the upload URL."""
    declared_length: int
    channel: str | None
    initial_comment: str | None
    thread_ts: str | None
    data: bytes = field(repr=False)
    alt_txt: str | None = None
    """The image description given to files.getUploadURLExternal."""
    message_ts: str | None = None
    """The file-share message in ``channel`` (None when the file was not shared)."""


@dataclass
class ResponseUrlPost:
    """A POST to a response_url the fake handed out with a slash command."""

    url: str
    body: dict[str, Any]
    response_type: str
    """Either "ephemeral" (Slack's default) or "in_channel"."""
    replace_original: bool
    delete_original: bool
    status: int
    error: str | None
    time: float


@dataclass
class SocketDelivery:
    """An envelope sent over Socket Mode and what the client answered."""

    envelope_id: str
    type: str
    envelope: dict[str, Any]
    connection_id: int
    sent_at: float
    """The ack clock's reading when the envelope was written to the socket."""
    response_url: str | None = None
    acked: bool = False
    ack_payload: dict[str, Any] | None = None
    ack_latency_s: float | None = None
    extra_acks: int = 0
    """Acks received after the first one for the same envelope."""
    _acked_event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def late(self) -> bool:
        """Not acknowledged within 3 s: acked too late, or (so far) not at all."""
        return self.ack_latency_s is None or self.ack_latency_s > ACK_DEADLINE_S

    async def wait_ack(self, timeout: float = ACK_DEADLINE_S + 1.0) -> None:  # noqa: ASYNC109
        """Wait for the ack; raises TimeoutError."""
        async with asyncio.timeout(timeout):
            await self._acked_event.wait()

    def record_ack(self, payload: dict[str, Any] | None, now: float) -> None:
        if self.acked:
            self.extra_acks += 1
            return
        self.acked = True
        self.ack_payload = payload
        self.ack_latency_s = now - self.sent_at
        self._acked_event.set()


@dataclass
class HttpDelivery:
    """A request the fake POSTed to an HTTP-mode app, and the app's answer."""

    status: int
    body: str
    content_type: str
    latency_s: float

    @property
    def late(self) -> bool:
        return self.latency_s > ACK_DEADLINE_S
