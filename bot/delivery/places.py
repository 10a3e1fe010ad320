"""Where a subscription's messages go beyond the channel itself: its thread and its pin.

``thread``: the first message of a count in the channel is the thread's parent (the live
scoreboard, when the subscription has one), and every later post goes into its thread
(``DeliveryAction.REPLY``, with the place ``ChannelRef.thread``); the adapter shows a final in
the channel too. A parent that was deleted makes the next post a new parent, and the admins are
told; a channel where the bot may not start threads gets its posts in the channel, the option
is turned off and the admins are told, once.

``pin``: the live scoreboard is pinned when it is posted and unpinned when it shows the final;
a channel where the bot may not pin turns the option off the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from bot.delivery.adapter import Adapter, Earlier
from bot.delivery.pacing import Pace
from bot.domain.message import Attachment, Message, Outgoing
from bot.domain.subscription import Subscription
from bot.errors import DeliveryCancelled, MessageGone, NotAllowedHere
from bot.store import Database, outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import Delivery

log = logging.getLogger("bot.delivery.worker")

Tell = Callable[[Delivery, str], Awaitable[None]]
"""Tells the admins (an alert about ``d``'s subscription)."""
Find = Callable[[Delivery], Awaitable[Earlier | None]]
"""Where an earlier attempt posted a delivery, if one did (its channel or its thread)."""


@dataclass(frozen=True, slots=True)
class Placed:
    """Where a post went: its message, the thread it went into (None: the channel itself),
    and whether an earlier attempt had shown its chart already."""

    message_id: str
    thread: str | None = None
    charted: bool = False


class Places:
    """Threads and pins for one platform's courier."""

    def __init__(self, db: Database, adapter: Adapter, tell: Tell) -> None:
        self.db = db
        self.adapter = adapter
        self.tell = tell

    async def subscription(self, d: Delivery) -> Subscription:
        """``d``'s subscription; cancels ``d`` when it is gone or disabled."""
        assert d.subscription_id is not None
        async with self.db.connect() as conn:
            sub = await sub_rows.get(conn, d.subscription_id)
        if sub is None or not sub.enabled:
            async with self.db.begin() as conn:
                await outbox.cancel_orphans(conn, [d.id])
            raise DeliveryCancelled("its subscription was removed or disabled")
        return sub

    async def reply(
        self,
        d: Delivery,
        content: Outgoing,
        key: str,
        pace: Pace,
        attachment: Attachment | None,
        find: Find,
    ) -> Placed:
        """Post ``d`` into its subscription's thread (see the module docstring); where it
        went. ``attachment``: the chart that goes in the post itself (None where it is a step
        of its own, ``Adapter.charts_apart``)."""
        sub = await self.subscription(d)
        parent = sub.live_message_id if sub.wants.live else sub.thread_message_id
        if not sub.wants.thread or parent is None:
            earlier = await find(d)
            message_id = await self.adapter.post(
                d.channel, content, key=key, pace=pace, attachment=attachment, earlier=earlier
            )
            if sub.wants.thread and not sub.wants.live:
                await self._parent(sub, message_id)
            return Placed(message_id, None, earlier is not None and earlier.with_attachment)
        place = replace(d.channel, thread=parent)
        try:
            earlier = await find(replace(d, channel=place))
            message_id = await self.adapter.post(
                place, content, key=key, pace=pace, attachment=attachment, earlier=earlier
            )
            return Placed(message_id, parent, earlier is not None and earlier.with_attachment)
        except MessageGone as exc:
            log.info("the parent of the thread is gone (%s): a new one", exc)
            message_id = await self.adapter.post(
                d.channel, content, key=key, pace=pace, attachment=attachment
            )
            await self._parent(sub, message_id)
            await self.tell(d, self.renewed(d))
            return Placed(message_id)
        except NotAllowedHere as exc:
            message_id = await self.adapter.post(
                d.channel, content, key=key, pace=pace, attachment=attachment
            )
            await self._off(sub, thread=False)
            await self.tell(
                d,
                f"tallybot may not post in threads in {d.channel} ({exc}): {d.count_id}'s updates "
                "go to the channel itself from now on. Give it Create Public Threads and Send "
                "Messages in Threads (Discord), then subscribe again with thread.",
            )
            return Placed(message_id)

    def renewed(self, d: Delivery) -> str:
        return (
            f"The first message of {d.count_id}'s thread in {d.channel} is gone (deleted?): "
            "tallybot started a new thread under its latest message."
        )

    async def scoreboard(
        self, d: Delivery, sub: Subscription, message_id: str, content: Outgoing, *, new: bool
    ) -> None:
        """After the live scoreboard was posted (``new``) or edited: pin a new one, unpin it at
        the final; a new scoreboard of a thread subscription is a new thread, said to admins."""
        if new and sub.wants.thread and sub.live_message_id is not None:
            await self.tell(d, self.renewed(d))
        if not sub.wants.pin:
            return
        final = isinstance(content, Message) and content.final
        try:
            if final:
                await self.adapter.unpin(d.channel, message_id)
            elif new:
                await self.adapter.pin(d.channel, message_id)
        except NotAllowedHere as exc:
            await self._off(sub, pin=False)
            await self.tell(
                d,
                f"tallybot may not pin messages in {d.channel} ({exc}): {d.count_id}'s "
                "scoreboard stays unpinned. Give it Pin Messages (Discord; pins:write on Slack), "
                "then subscribe again with pin.",
            )

    async def _parent(self, sub: Subscription, message_id: str) -> None:
        async with self.db.begin() as conn:
            if sub.wants.live:
                await sub_rows.set_live_message(conn, sub.id, message_id)
            else:
                await sub_rows.set_thread_message(conn, sub.id, message_id)

    async def _off(self, sub: Subscription, *, thread: bool = True, pin: bool = True) -> None:
        wants = replace(sub.wants, thread=sub.wants.thread and thread, pin=sub.wants.pin and pin)
        async with self.db.begin() as conn:
            await sub_rows.set_wants(conn, sub.id, wants)
