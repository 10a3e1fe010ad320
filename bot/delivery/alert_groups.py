"""The alerts of subscriptions that stopped: one per server or workspace and cause.

When one cause stops many channels at once (the bot removed from a Discord server stops every
channel subscribed there), the admins get one alert that says so, with the number of channels
and which they are, not one post per channel. A stopped subscription's alert is queued to go
:data:`HOLD` later; the next ones of the same place and cause (``PermanentDeliveryError.cause``)
join it while it waits, in the same transaction that records each of them dead. An alert
already on its way is never changed: what comes after it starts a new one. A failure without a
known cause (the platform said nothing that holds beyond its channel) is told alone, at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef
from bot.domain.words import count_of
from bot.errors import PermanentDeliveryError
from bot.store import outbox
from bot.store.outbox import Delivery, DeliveryAction, NewDelivery

HOLD = timedelta(seconds=10)
"""How long a stopped subscription's alert waits for the others of its place and cause."""
SHOWN = 10
"""Channels named in one alert at most (the rest are counted)."""


def group_of(d: Delivery, exc: PermanentDeliveryError) -> str | None:
    """What joins the alerts of ``d``'s place and cause; None: told alone."""
    if exc.cause is None:
        return None
    return f"stopped|{d.channel.platform}:{d.channel.workspace}|{exc.cause}"


def worded(d: Delivery, exc: PermanentDeliveryError, parts: Sequence[str], by: str) -> str:
    """The alert of the channels ``parts`` that ``exc``'s cause stopped in ``d``'s place."""
    place = f"{d.channel.platform}:{d.channel.workspace}"
    named = "; ".join(parts[:SHOWN])
    more = f"; and {len(parts) - SHOWN} more" if len(parts) > SHOWN else ""
    fix = f" {exc.fix}" if exc.fix else ""
    return (
        f"tallybot stopped posting in {count_of(len(parts), 'channel')} of {place}: "
        f"{exc.cause} ({named}{more}).{fix}{by}"
    )


async def queue_stopped(
    conn: AsyncConnection,
    d: Delivery,
    exc: PermanentDeliveryError,
    targets: Sequence[ChannelRef],
    *,
    now: datetime,
    by: str = "",
) -> None:
    """Tell ``targets`` that ``d``'s subscription stopped: joined to a waiting alert of its
    place and cause, else a new one that waits :data:`HOLD`."""
    group = group_of(d, exc)
    assert group is not None
    part = f"{d.count_id} in {d.channel}"
    for target in targets:
        if await _join(conn, target, group, part, d, exc, by):
            continue
        notice = Notice(worded(d, exc, [part], by), d.count_id, group, (part,))
        [new_id] = await outbox.enqueue(conn, [_delivery(d, target, notice, now)])
        await outbox.hold(conn, new_id, until=now + HOLD)


async def _join(
    conn: AsyncConnection,
    target: ChannelRef,
    group: str,
    part: str,
    d: Delivery,
    exc: PermanentDeliveryError,
    by: str,
) -> bool:
    for waiting in await outbox.pending_alerts(conn, target):
        notice = Notice.from_json(waiting.payload)
        if notice.group != group:
            continue
        parts = notice.parts if part in notice.parts else (*notice.parts, part)
        grown = Notice(worded(d, exc, parts, by), notice.count_id, group, parts)
        if await outbox.revise(conn, waiting.id, grown.to_json()):
            return True
    return False


def _delivery(d: Delivery, target: ChannelRef, notice: Notice, now: datetime) -> NewDelivery:
    return NewDelivery(
        subscription_id=None,
        channel=target,
        count_id=d.count_id,
        tally_seq=d.tally_seq,
        action=DeliveryAction.ALERT,
        significant=True,
        payload=notice.to_json(),
        created_at=now,
    )
