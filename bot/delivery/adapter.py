"""The adapter: what the core asks of a chat platform (the ``Adapter`` base class, with defaults
for all but delivery) and the values it carries; its in-memory fake is
:class:`bot.testing.adapter.RecordingAdapter`. How a platform plugs in (its settings, secrets,
admin policy, ``build``) is in ``bot.platform``.

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
``limits``. Every request that answers a command goes through the adapter's ``replies``
(``bot.delivery.replies``): the same pacer, ahead of routine deliveries, a 429 waited out.

Commands flow the other way: an adapter turns a slash command or a typed line into a
``bot.commands.request.Request`` (``bot.platform.Context.request``, which asks the platform's admin
policy) and shows the ``Reply``. ``health()`` says truthfully whether the platform is reachable
(``/readyz``); ``http_routes()`` are mounted on the ops server.
"""

from __future__ import annotations

import abc
import asyncio
import functools
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from aiohttp import web

from bot.base.lifecycle import Closing
from bot.delivery.pacing import UNLIMITED, Limits, LimitSaid, Pace, Pacer, Window, unpaced
from bot.delivery.replies import Replies
from bot.domain.message import Attachment, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import NotAllowedHere, PermanentDeliveryError


@dataclass(frozen=True, slots=True)
class Earlier:
    """A delivery's message found in its channel: an earlier attempt posted it."""

    message_id: str
    with_attachment: bool = False
    """Its attachment (a final's chart) is shown with it too."""


@dataclass(frozen=True, slots=True)
class Health:
    """Whether an adapter can reach its platform now, and if not, why (``/readyz`` shows it)."""

    connected: bool = True
    reason: str | None = None
    """What is wrong when not connected ("the gateway is reconnecting", ...)."""

    @classmethod
    def down(cls, reason: str) -> Health:
        return cls(False, reason)


class Adapter(Closing, abc.ABC):
    """The base of every adapter: a platform's delivery and commands, opened and closed as an
    async context manager. Subclasses implement ``post``, ``edit`` and ``find_posted`` and set
    ``platform``; everything else has a default (see ``bot.platform`` for the whole contract)."""

    platform: Platform
    limits: Limits = UNLIMITED
    dedup_window: float = 0.0
    """Seconds after a post during which the platform itself drops a second post with the same
    key (Discord's nonce); 0 when it has no such thing. A post that may have gone out longer
    ago than this is confirmed from the channel (``find_posted``) before it is sent again."""

    charts_apart: bool = False
    """A final's chart is shown by requests of its own after its message (Slack uploads it into
    the message's thread): the dispatcher then posts the message without it, records it as
    sent, and shows the chart as a step of its own (``show_chart``). False: the chart goes in
    the post itself (``post``'s ``attachment``)."""

    publishes: Window | None = None
    """How many messages of one channel the platform lets be published to the channels that
    follow it (``crosspost``) in what time (Discord: about 10 an hour); None: it has no such
    thing. Calls give way to the final under it (``bot.delivery.publishing``)."""

    budget_key: str = ""
    """A non-secret fingerprint of the credentials the platform counts this bot's requests by
    (``Secret.fingerprint`` of its token): instances of the same bot share a rate budget,
    two bots on one store do not (``bot.delivery.shared``)."""

    def watch_limits(self, said: LimitSaid) -> None:
        """Tell ``said`` of every 429 the platform answers for a whole platform-wide bucket,
        including those the client library waits out by itself; the default: nothing to tell
        (such 429s reach the dispatcher as ``RateLimited``)."""

    @functools.cached_property
    def replies(self) -> Replies:
        """Where the adapter sends each request that answers a command
        (``bot.delivery.replies``)."""
        return Replies()

    def pace_replies(self, pacer: Pacer) -> None:
        """Pace commands' replies with ``pacer``: the dispatcher's for this platform, the one its
        deliveries are paced by."""
        self.replies.use(pacer)

    async def aopen(self) -> None:
        """Connect (log in, open the gateway or socket); the default has nothing to open."""

    async def finish_commands(self) -> None:
        """Take no more commands, and carry out and answer every one acknowledged so far
        (``bot.commands.inflight.InFlight.finish``, within its grace): the bot calls it for
        every adapter at once as it stops, before anything closes. The default: no commands."""

    async def aclose(self) -> None:
        """Disconnect, letting commands being answered finish briefly; the default: nothing."""

    async def health(self) -> Health:
        """Whether the platform is reachable now (``/readyz``'s ``adapter:<platform>``). The
        default, for adapters with no connection of their own, is connected."""
        return Health()

    def http_routes(self) -> list[web.RouteDef]:
        """Routes the ops server mounts for this adapter (Slack's HTTP mode); default none."""
        return []

    async def serve(self) -> None:
        """What the adapter runs in the foreground while the bot serves (the console's prompt);
        the bot stops when it returns. The default waits until cancelled."""
        await asyncio.Event().wait()

    @abc.abstractmethod
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

        ``channel.thread`` (a subscription's ``thread``, on a platform that has them): post into
        the thread under that message, starting it if need be; a final is shown in the channel
        too. :class:`MessageGone` when that message (or its thread) is gone,
        :class:`NotAllowedHere` when the bot may not post in threads there.

        ``attachment`` (a PNG chart) is shown with the message, as part of the same delivery:
        the same rules hold for it, so a retry must not show it twice either. A request that
        may create the message is paced with ``delivers=True``.
        """

    async def show_chart(
        self,
        channel: ChannelRef,
        message_id: str,
        content: Outgoing,
        attachment: Attachment,
        *,
        pace: Pace = unpaced,
    ) -> None:
        """Show ``attachment`` (a final's chart) with the message ``message_id`` posted before
        from ``content``; asked only of an adapter with ``charts_apart``. The request that
        shows it is paced with ``delivers=True``; a chart the platform refuses for good is left
        out (logged), as the message is out."""
        raise PermanentDeliveryError(f"{self.platform} shows a chart in the post itself")

    @abc.abstractmethod
    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        """Replace a message posted before (a live scoreboard); paced with ``delivers=True``."""

    async def pin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """Pin a message (a live scoreboard); :class:`NotAllowedHere` where the bot may not,
        and on a platform without pins (the default)."""
        raise NotAllowedHere(f"no pins on {self.platform}")

    async def unpin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """Unpin a message pinned before (the default: nothing is ever pinned)."""

    async def crosspost(
        self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced
    ) -> None:
        """Publish a message posted before in an announcement channel to every channel that
        follows it, in one request whatever their number; paced with ``delivers=True``. A
        message published already counts as published (a repeat after a lost answer).
        :class:`MessageGone` when the message is gone; :class:`NotAllowedHere` where the bot may
        not publish, and on a platform without announcement channels (the default)."""
        raise NotAllowedHere(f"no announcement channels on {self.platform}")

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """Delete a message the bot posted (a rehearsal's test message,
        ``bot.delivery.rehearsal``); a message already gone counts as deleted. The default: the
        platform cannot, a :class:`PermanentDeliveryError` saying so."""
        raise PermanentDeliveryError(f"tallybot cannot delete messages on {self.platform}")

    @abc.abstractmethod
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
