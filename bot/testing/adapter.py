"""The in-memory fake adapter: records posts and edits, and can be told to fail."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime

from bot.delivery.adapter import Adapter, Earlier, Health
from bot.delivery.pacing import UNLIMITED, Limits, Pace, Route, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import MessageGone, PermanentDeliveryError, TransientDeliveryError


@dataclass
class Posted:
    channel: ChannelRef
    message_id: str
    content: Outgoing
    key: str
    edits: list[Outgoing] = field(default_factory=list)
    attachment: Attachment | None = None


class RecordingAdapter(Adapter):
    """The in-memory fake adapter: records posts and edits; can be told to fail."""

    def __init__(self, platform: str = "console", limits: Limits | None = None) -> None:
        self.platform = Platform(platform)
        self.limits = limits or UNLIMITED
        self.reported = Health()
        """What ``health()`` reports (tests set it down)."""
        self.posted: list[Posted] = []
        self.gone_channels: set[ChannelRef] = set()
        self.deleted_messages: set[str] = set()
        self.transient_failures = 0
        self.checked_keys: list[str] = []
        """Keys looked for with ``find_posted``, in order."""
        self.reads = 0
        """How many ``find_posted`` reads were made."""
        self.open = False

    async def aopen(self) -> None:
        self.open = True

    async def aclose(self) -> None:
        self.open = False

    async def health(self) -> Health:
        return self.reported

    def render(self, channel: ChannelRef, content: Outgoing) -> None:
        """What a real adapter builds from ``content`` before sending (nothing here); override
        it to fail the way a renderer bug would."""

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
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        self.render(channel, content)
        if earlier is not None:
            for p in self.posted:
                if p.message_id == earlier.message_id and p.attachment is None:
                    p.attachment = attachment
            return earlier.message_id
        async with pace(Route("post", channel.channel), delivers=True):
            self._check(channel)
            message_id = f"m{len(self.posted) + 1}"
            self.posted.append(Posted(channel, message_id, content, key, attachment=attachment))
        return message_id

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        self.render(channel, content)
        async with pace(Route("edit", channel.channel), delivers=True):
            self._check(channel)
            for p in self.posted:
                if p.message_id == message_id and message_id not in self.deleted_messages:
                    p.edits.append(content)
                    return
        raise MessageGone(f"{channel}: message {message_id} not found")

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        async with pace(Route("delete", channel.channel)):
            self._check(channel)
            self.deleted_messages.add(message_id)

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        async with pace(Route("history", channel.channel)):
            self._check(channel)
            self.reads += 1
            self.checked_keys.extend(keys)
            gone = self.deleted_messages
            return {
                p.key: Earlier(p.message_id, with_attachment=p.attachment is not None)
                for p in self.posted
                if p.channel == channel and p.key in keys and p.message_id not in gone
            }

    def messages(self, channel: ChannelRef | None = None) -> list[Outgoing]:
        return [p.content for p in self.posted if channel is None or p.channel == channel]
