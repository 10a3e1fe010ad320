"""The contract between the core and a chat platform, and an in-memory fake of it.

An adapter is opened and closed as an async context manager and does two things for the core:
``post`` a new message and ``edit`` one it posted before. It renders the platform-neutral
``Message`` (or a ``Notice`` for admins) its own way, and translates the platform's errors into
``TransientDeliveryError`` (worth retrying), ``PermanentDeliveryError`` (channel gone, no
permission) or ``MessageGone`` (the message to edit no longer exists). A post may carry an
``Attachment`` (the chart that goes with a count's final message), shown as an image.

Commands flow the other way: an adapter turns a slash command or a typed line into a
``bot.commands.Request`` and shows the ``Reply``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self

from bot.errors import MessageGone, PermanentDeliveryError, TransientDeliveryError
from bot.message import Message
from bot.subscription import ChannelRef, Platform


@dataclass(frozen=True, slots=True)
class Notice:
    """A plain note for admins: a source went stale, a channel was disabled, a tally rejected."""

    text: str
    count_id: str | None = None

    def to_json(self) -> str:
        return json.dumps({"text": self.text, "count_id": self.count_id})

    @classmethod
    def from_json(cls, text: str) -> Notice:
        raw = json.loads(text)
        return cls(text=raw["text"], count_id=raw["count_id"])


Outgoing = Message | Notice


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file that goes with a reply, such as a chart: its name, its bytes, and a description of
    what it shows for those who cannot see it (alt text)."""

    filename: str
    data: bytes
    description: str


@dataclass(frozen=True, slots=True)
class Window:
    """At most ``limit`` requests in any ``seconds``."""

    limit: int
    seconds: float


@dataclass(frozen=True, slots=True)
class Limits:
    """A platform's documented sending limits, which the dispatcher paces itself by."""

    requests: Window
    """Every request of the bot on this platform (Discord: 50 per second)."""
    channel_posts: Window
    """New messages in one channel (Discord: 5 per 5 s; Slack: about 1 per second)."""
    edits: Window
    """Edits of earlier messages (live scoreboards)."""
    edits_per_channel: bool
    """True when ``edits`` applies to each channel (Discord), False for the whole platform
    (Slack's chat.update, Tier 3, counts per workspace)."""
    startup_requests: int = 0
    """Requests the adapter itself makes while starting, under ``requests`` (the dispatcher
    counts them, so that its first sends do not pile on top of them in one window)."""


UNLIMITED = Limits(Window(10_000, 1), Window(10_000, 1), Window(10_000, 1), True)


class Adapter(Protocol):
    platform: Platform
    limits: Limits

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        maybe_sent: bool = False,
        attachment: Attachment | None = None,
    ) -> str:
        """Post a new message and return its platform id.

        ``key`` is unique per delivery and stable across retries: adapters use it for the
        platform's idempotency (Discord's nonce) or to find an earlier copy (Slack's message
        metadata). ``maybe_sent`` is True when an earlier attempt may have gone through (a
        retry, or a send interrupted by a crash): an adapter without idempotency must then look
        for the earlier copy and return its id instead of posting again.

        ``attachment`` (a PNG chart) is shown with the message, as part of the same delivery:
        the same rules hold for it, so a retry must not show it twice either.
        """
        ...

    async def edit(self, channel: ChannelRef, message_id: str, content: Outgoing) -> None:
        """Replace a message posted before (a live scoreboard)."""
        ...


@dataclass
class Posted:
    channel: ChannelRef
    message_id: str
    content: Outgoing
    key: str
    edits: list[Outgoing] = field(default_factory=list)
    attachment: Attachment | None = None


class RecordingAdapter:
    """The in-memory fake adapter: records posts and edits; can be told to fail."""

    def __init__(self, platform: Platform = Platform.CONSOLE, limits: Limits | None = None) -> None:
        self.platform = platform
        self.limits = limits or UNLIMITED
        self.posted: list[Posted] = []
        self.gone_channels: set[ChannelRef] = set()
        self.deleted_messages: set[str] = set()
        self.transient_failures = 0
        self.checked_keys: list[str] = []
        """Keys posted with ``maybe_sent=True`` (where a real adapter would look first)."""
        self.open = False

    async def __aenter__(self) -> Self:
        self.open = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.open = False

    def _check(self, channel: ChannelRef) -> None:
        if channel in self.gone_channels:
            raise PermanentDeliveryError(f"{channel}: unknown channel")
        if self.transient_failures > 0:
            self.transient_failures -= 1
            raise TransientDeliveryError(f"{channel}: 503 service unavailable", retry_after=0.0)

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        maybe_sent: bool = False,
        attachment: Attachment | None = None,
    ) -> str:
        self._check(channel)
        if maybe_sent:
            self.checked_keys.append(key)
        for p in self.posted:
            if p.key == key:  # idempotent like Discord's enforced nonce
                return p.message_id
        message_id = f"m{len(self.posted) + 1}"
        self.posted.append(Posted(channel, message_id, content, key, attachment=attachment))
        return message_id

    async def edit(self, channel: ChannelRef, message_id: str, content: Outgoing) -> None:
        self._check(channel)
        for p in self.posted:
            if p.message_id == message_id and message_id not in self.deleted_messages:
                p.edits.append(content)
                return
        raise MessageGone(f"{channel}: message {message_id} not found")

    def messages(self, channel: ChannelRef | None = None) -> list[Outgoing]:
        return [p.content for p in self.posted if channel is None or p.channel == channel]
