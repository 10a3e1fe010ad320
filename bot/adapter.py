"""The contract between the core and a chat platform, and an in-memory fake of it.

An adapter is opened and closed as an async context manager and does three things for the
core: ``post`` a new message, ``edit`` one it posted before, and ``find_posted``: look in a
channel for messages that earlier attempts of deliveries may have posted. It renders the
platform-neutral ``Message`` (or a ``Notice`` for admins) its own way, and translates the
platform's errors into ``TransientDeliveryError`` (worth retrying; ``RateLimited`` for a 429),
``PermanentDeliveryError`` (channel gone, no permission) or ``MessageGone`` (the message to
edit no longer exists). A post may carry an ``Attachment`` (the chart that goes with a count's
final message), shown as an image.

Every request an adapter makes for a delivery goes through the ``pace`` it is given
(``bot.delivery.pacing``): it names its route, and waits for its turn under the platform's
``limits``.

Commands flow the other way: an adapter turns a slash command or a typed line into a
``bot.commands.request.Request`` and shows the ``Reply``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import Protocol, Self

from bot.delivery.pacing import UNLIMITED, Limits, Pace, Route, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.errors import MessageGone, PermanentDeliveryError, TransientDeliveryError
from bot.subscription import ChannelRef, Platform


@dataclass(frozen=True, slots=True)
class Earlier:
    """A delivery's message found in its channel: an earlier attempt posted it."""

    message_id: str
    with_attachment: bool = False
    """Its attachment (a final's chart) is shown with it too."""


class Adapter(Protocol):
    platform: Platform
    limits: Limits
    dedup_window: float
    """Seconds after a post during which the platform itself drops a second post with the same
    key (Discord's nonce); 0 when it has no such thing. A post that may have gone out longer
    ago than this is confirmed from the channel (``find_posted``) before it is sent again."""

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
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        """Post a new message and return its platform id.

        ``key`` is unique per delivery and stable across retries: every post carries it (as
        Discord's nonce and in its footer, in Slack's message metadata) so that
        ``find_posted`` can find the message again, and the platform may deduplicate by it.

        ``earlier``: the message is already in the channel (``find_posted`` found it): post
        nothing new, only show what is missing of it (its attachment), and return its id.

        ``attachment`` (a PNG chart) is shown with the message, as part of the same delivery:
        the same rules hold for it, so a retry must not show it twice either. A request that
        may create the message is paced with ``delivers=True``.
        """
        ...

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        """Replace a message posted before (a live scoreboard); paced with ``delivers=True``."""
        ...

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        """Which of ``keys`` the bot's own recent messages in ``channel`` carry (posted by
        earlier attempts, none before ``since``), by key. One read serves many keys."""
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

    dedup_window = 0.0

    def __init__(self, platform: Platform = Platform.CONSOLE, limits: Limits | None = None) -> None:
        self.platform = platform
        self.limits = limits or UNLIMITED
        self.posted: list[Posted] = []
        self.gone_channels: set[ChannelRef] = set()
        self.deleted_messages: set[str] = set()
        self.transient_failures = 0
        self.checked_keys: list[str] = []
        """Keys looked for with ``find_posted``, in order."""
        self.reads = 0
        """How many ``find_posted`` reads were made."""
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
