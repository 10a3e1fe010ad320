"""Publishing: a ``publish`` subscription's calls and finals, crossposted from its announcement
channel to every channel that follows it (Discord's Channel Following), one request each.

When the courier records the post of a call or a final for a subscription with ``publish`` as
SENT, it queues in the same transaction a ``DeliveryAction.PUBLISH`` step (:func:`publish_step`)
that publishes that message. The step is claimed, noted right before its request goes out,
retried and recovered like any delivery, so it goes out exactly once: a repeat after a lost
answer or a kill is sent again as it is, and the platform's answer that the message is published
already counts as done (``Adapter.crosspost``); no channel is read to confirm it.

The platform bounds publishing per channel (``Adapter.publishes``, Discord's 10 an hour): each
request waits for its slot in the pacer's bucket for that route like any other, and the steps
published within the window are counted from the store (so a restart remembers them). A call
gives way (SUPERSEDED, said why) when publishing it would leave no room for the final; a final
always goes, waiting for its slot if it must. A channel where the bot may not publish (it is
no announcement channel any more, a permission is gone) turns the option off, and the admins
are told once; the message itself is out already.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bot.base.clock import Clock
from bot.delivery.adapter import Adapter
from bot.delivery.pacing import Pace
from bot.domain.message import Message, Outgoing
from bot.domain.subscription import CALL_EVENTS
from bot.errors import MessageGone, NotAllowedHere, PermanentDeliveryError
from bot.store import Database, outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import Delivery, DeliveryAction, NewDelivery

log = logging.getLogger("bot.delivery.worker")

Tell = Callable[[Delivery, str], Awaitable[None]]
"""Tells the admins (an alert about ``d``'s subscription)."""
GAVE_WAY = "not published: the hour's publishing is kept for the final"


@dataclass(frozen=True, slots=True)
class PublishStep:
    """What a ``PUBLISH`` delivery publishes: the message ``on`` (its id), a ``final`` or not."""

    on: str
    final: bool

    @classmethod
    def of(cls, d: Delivery) -> PublishStep:
        raw = json.loads(d.payload)
        return cls(str(raw["on"]), bool(raw["final"]))


def is_call(content: Outgoing) -> bool:
    """Whether ``content`` is what a ``publish`` subscription publishes: a call or a final."""
    return isinstance(content, Message) and (
        content.final or bool(frozenset(content.events) & CALL_EVENTS)
    )


def publish_step(post: Delivery, message_id: str, *, final: bool, at: datetime) -> NewDelivery:
    """The ``PUBLISH`` delivery that publishes ``post``'s message ``message_id``."""
    return NewDelivery(
        subscription_id=post.subscription_id,
        channel=post.channel,
        count_id=post.count_id,
        tally_seq=post.tally_seq,
        action=DeliveryAction.PUBLISH,
        significant=True,
        payload=json.dumps({"on": message_id, "final": final}),
        created_at=at,
    )


class Publishing:
    """The publish steps of one platform's courier (see the module docstring)."""

    def __init__(self, db: Database, adapter: Adapter, clock: Clock, tell: Tell) -> None:
        self.db = db
        self.adapter = adapter
        self.clock = clock
        self.tell = tell

    async def step_after(
        self, d: Delivery, content: Outgoing, message_id: str
    ) -> NewDelivery | None:
        """The step that publishes ``d``'s message, posted as ``message_id``: for a call or a
        final posted in the channel of a subscription that publishes, on a platform that does."""
        if self.adapter.publishes is None or d.subscription_id is None:
            return None
        if d.action is not DeliveryAction.POST or not is_call(content):
            return None
        async with self.db.connect() as conn:
            sub = await sub_rows.get(conn, d.subscription_id)
        if sub is None or not sub.wants.publish:
            return None
        final = isinstance(content, Message) and content.final
        return publish_step(d, message_id, final=final, at=self.clock.now())

    async def publish(self, d: Delivery, pace: Pace) -> str | None:
        """Publish the step ``d``'s message; its id, or None when it gave way (recorded)."""
        step = PublishStep.of(d)
        window = self.adapter.publishes
        if not step.final and window is not None:
            since = self.clock.now() - timedelta(seconds=window.seconds)
            async with self.db.connect() as conn:
                used = await outbox.published_since(conn, d.channel, since)
            used -= 1 if d.sending_at is not None else 0  # itself, in doubt
            if used >= window.limit - 1:
                await self._give_way(d, GAVE_WAY)
                return None
        try:
            await self.adapter.crosspost(d.channel, step.on, pace=pace)
        except MessageGone as exc:
            await self._give_way(d, f"not published: the message is gone ({exc})")
            return None
        except (NotAllowedHere, PermanentDeliveryError) as exc:
            await self._off(d, exc)
            return None
        return step.on

    async def _give_way(self, d: Delivery, reason: str) -> None:
        async with self.db.begin() as conn:
            await outbox.give_way(conn, d.id, reason=reason)
        log.info("%s", reason, extra={"count": d.count_id, "delivery": d.id})

    async def _off(self, d: Delivery, exc: Exception) -> None:
        assert d.subscription_id is not None
        async with self.db.begin() as conn:
            sub = await sub_rows.get(conn, d.subscription_id)
            if sub is not None and sub.wants.publish:
                await sub_rows.set_wants(conn, sub.id, replace(sub.wants, publish=False))
        await self._give_way(d, f"not published: {exc}")
        if sub is not None and sub.wants.publish:
            await self.tell(
                d,
                f"tallybot may not publish in {d.channel} ({exc}): {d.count_id}'s posts there "
                "are no longer published to the channels that follow it. Make it an "
                "announcement channel and give tallybot Send Messages and Manage Messages, then "
                "subscribe again with publish.",
            )
