"""The outbox: the durable queue of messages to post or edit on the platforms.

A delivery moves PENDING -> SENDING -> SENT. A failed send goes back to PENDING with a later
``next_attempt_at`` (:func:`mark_retry`) or ends as DEAD (:func:`mark_dead`); a PENDING delivery
made pointless by a newer one ends as SUPERSEDED; one whose subscription was removed or disabled
ends as CANCELLED (:func:`cancel_for_subscription`, :func:`cancel_orphans`, and
:func:`mark_attempt` at the last moment). SENT, SUPERSEDED, CANCELLED and DEAD are final: the
store refuses to change a finished delivery, except that a CANCELLED one whose request was
already on its way is recorded as SENT when it arrived (that is what the channel shows).

A delivery still SENDING when the bot starts was cut off mid-send (:func:`in_doubt`); if its
``sending_at`` is set, its request may have reached the platform.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Row, and_, case, exists, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.errors import StoreError
from bot.store.schema import outbox, subscriptions
from bot.subscription import ChannelRef, Platform


class DeliveryAction(StrEnum):
    POST = "post"
    """Post a new message."""
    EDIT_LIVE = "edit_live"
    """Edit the subscription's live scoreboard message in place."""
    ALERT = "alert"
    """Post an alert (e.g. to an admin channel)."""


class DeliveryStatus(StrEnum):
    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    SUPERSEDED = "superseded"
    CANCELLED = "cancelled"
    """Its subscription was removed or disabled before it went out."""
    DEAD = "dead"


OPEN = (DeliveryStatus.PENDING, DeliveryStatus.SENDING)
"""The statuses a delivery can still leave."""


@dataclass(frozen=True, slots=True)
class NewDelivery:
    """A message to queue. ``payload`` is JSON text, stored and returned as is.

    ``subscription_id`` is ``None`` for a message that belongs to no subscription (an alert to
    an admin channel).
    """

    subscription_id: int | None
    channel: ChannelRef
    count_id: str
    tally_seq: int | None
    action: DeliveryAction
    significant: bool
    payload: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Delivery(NewDelivery):
    """A queued message and where it stands.

    ``attempts`` counts failed sends (not 429s); ``sending_at`` is when its first request that
    could post it was about to go out (None: none ever did).
    """

    id: int
    status: DeliveryStatus
    attempts: int
    next_attempt_at: datetime
    sent_at: datetime | None = None
    platform_message_id: str | None = None
    last_error: str | None = None
    sending_at: datetime | None = None


def _delivery(row: Row[Any]) -> Delivery:
    return Delivery(
        subscription_id=row.subscription_id,
        channel=ChannelRef(Platform(row.platform), row.workspace, row.channel),
        count_id=row.count_id,
        tally_seq=row.tally_seq,
        action=DeliveryAction(row.action),
        significant=row.significant,
        payload=row.payload,
        created_at=row.created_at,
        id=row.id,
        status=DeliveryStatus(row.status),
        attempts=row.attempts,
        next_attempt_at=row.next_attempt_at,
        sent_at=row.sent_at,
        platform_message_id=row.platform_message_id,
        last_error=row.last_error,
        sending_at=row.sending_at,
    )


async def enqueue(conn: AsyncConnection, items: Sequence[NewDelivery]) -> list[int]:
    """Queue ``items`` as PENDING, due at once (``next_attempt_at = created_at``).

    One batched INSERT (an executemany on SQLite, a multi-row INSERT per 1000 rows on PostgreSQL);
    returns the new ids in the order of ``items``.
    """
    rows = [
        {
            "subscription_id": item.subscription_id,
            "platform": str(item.channel.platform),
            "workspace": item.channel.workspace,
            "channel": item.channel.channel,
            "count_id": item.count_id,
            "tally_seq": item.tally_seq,
            "action": str(item.action),
            "significant": item.significant,
            "payload": item.payload,
            "created_at": item.created_at,
            "status": str(DeliveryStatus.PENDING),
            "attempts": 0,
            "next_attempt_at": item.created_at,
        }
        for item in items
    ]
    if not rows:
        return []
    if conn.dialect.name != "sqlite":
        # SQLAlchemy's "insertmanyvalues": INSERT ... SELECT ... ORDER BY ... RETURNING, one
        # statement per 1000 rows, with the ids matched back to the parameter order.
        result = await conn.execute(
            insert(outbox).returning(outbox.c.id, sort_by_parameter_order=True), rows
        )
        return [int(new_id) for new_id in result.scalars()]
    # SQLite does not promise the order of RETURNING (SQLAlchemy would fall back to one INSERT
    # per row) and compiling a many-row VALUES is slow. But it gives each new row the rowid
    # max(id) + 1, and a store transaction on SQLite holds the write lock from its start
    # (BEGIN IMMEDIATE), so one executemany of a prepared INSERT yields max+1 .. max+n in order.
    before = int(await conn.scalar(select(func.coalesce(func.max(outbox.c.id), 0))) or 0)
    await conn.execute(insert(outbox), rows)
    after = int(await conn.scalar(select(func.max(outbox.c.id))) or 0)
    if after != before + len(rows):
        raise StoreError(
            f"outbox ids were not assigned in order ({before} + {len(rows)} != {after})"
        )
    return list(range(before + 1, after + 1))


async def get(conn: AsyncConnection, delivery_id: int) -> Delivery | None:
    """The delivery with id ``delivery_id``, or ``None``."""
    row = (await conn.execute(select(outbox).where(outbox.c.id == delivery_id))).first()
    return None if row is None else _delivery(row)


async def due(
    conn: AsyncConnection, platform: Platform, *, now: datetime, limit: int
) -> list[Delivery]:
    """Up to ``limit`` PENDING deliveries for ``platform`` with ``next_attempt_at <= now``,
    oldest (lowest id) first."""
    return await _select(
        conn,
        outbox.c.platform == str(platform),
        outbox.c.status == str(DeliveryStatus.PENDING),
        outbox.c.next_attempt_at <= now,
        limit=limit,
    )


async def in_doubt(conn: AsyncConnection, platform: Platform) -> list[Delivery]:
    """The deliveries for ``platform`` left SENDING (e.g. by a crash mid-send), oldest first."""
    return await _select(
        conn,
        outbox.c.platform == str(platform),
        outbox.c.status == str(DeliveryStatus.SENDING),
    )


async def dead(conn: AsyncConnection, *, limit: int = 50) -> list[Delivery]:
    """The latest-queued ``limit`` DEAD deliveries on every platform, newest (highest id) first."""
    return await _select(
        conn, outbox.c.status == str(DeliveryStatus.DEAD), limit=limit, newest=True
    )


async def depth(conn: AsyncConnection, platform: Platform) -> int:
    """How many deliveries for ``platform`` are not finished (PENDING or SENDING)."""
    n = await conn.scalar(
        select(func.count())
        .select_from(outbox)
        .where(outbox.c.platform == str(platform), outbox.c.status.in_([str(s) for s in OPEN]))
    )
    return int(n or 0)


async def mark_sending(
    conn: AsyncConnection, ids: Sequence[int], *, at: datetime | None = None
) -> int:
    """Claim the PENDING deliveries among ``ids`` for sending; returns how many were claimed.

    With ``at``, also record that the send starts now (see :func:`mark_attempt`); without it,
    ``sending_at`` is left as it was. Deliveries that are not PENDING (another worker claimed
    them, or they were superseded) are left alone, so a caller should only send the claimed
    ones when the count falls short.
    """
    if not ids:
        return 0
    values: dict[str, object] = {"status": str(DeliveryStatus.SENDING)}
    if at is not None:
        values["sending_at"] = at
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status == str(DeliveryStatus.PENDING))
        .values(**values)
    )
    return result.rowcount


async def mark_attempt(conn: AsyncConnection, delivery_id: int, *, at: datetime) -> bool:
    """Record, right before its request goes out, that a claimed delivery may reach the platform
    from now on; False (nothing to send) when it must not go out any more.

    It must not when it is no longer SENDING (its subscription was removed meanwhile and took
    it along) or when its subscription is gone or disabled (it is CANCELLED here). A delivery
    still SENDING with ``sending_at`` set after a crash may have reached the platform; one with
    ``sending_at`` unset was claimed but never tried. ``sending_at`` keeps the first attempt's
    time: from then on an earlier copy may exist.
    """
    mine = and_(outbox.c.id == delivery_id, outbox.c.status == str(DeliveryStatus.SENDING))
    await conn.execute(
        update(outbox)
        .where(mine, _orphaned())
        .values(status=str(DeliveryStatus.CANCELLED))
    )
    result = await conn.execute(
        update(outbox).where(mine).values(sending_at=func.coalesce(outbox.c.sending_at, at))
    )
    return result.rowcount == 1


def _orphaned() -> ColumnElement[bool]:
    """The delivery belongs to a subscription that is gone or disabled."""
    live = exists().where(
        subscriptions.c.id == outbox.c.subscription_id, subscriptions.c.enabled.is_(True)
    )
    return and_(outbox.c.subscription_id.is_not(None), ~live)


async def cancel_orphans(conn: AsyncConnection, ids: Sequence[int]) -> set[int]:
    """Cancel the open deliveries among ``ids`` whose subscription is gone or disabled (queued
    just as it was removed); returns their ids."""
    if not ids:
        return set()
    rows = await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status.in_([str(s) for s in OPEN]), _orphaned())
        .values(status=str(DeliveryStatus.CANCELLED))
        .returning(outbox.c.id)
    )
    return {int(r.id) for r in rows}


async def release(conn: AsyncConnection, ids: Sequence[int]) -> int:
    """Put the SENDING deliveries among ``ids`` back to PENDING, not counting an attempt.

    For claimed deliveries that were not tried (the batch stopped early) or whose send was cut
    off by a crash (:func:`in_doubt`). ``sending_at`` is kept: when set, it tells the next
    sender that an earlier attempt may have gone through. Returns how many were released.
    """
    if not ids:
        return 0
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status == str(DeliveryStatus.SENDING))
        .values(status=str(DeliveryStatus.PENDING))
    )
    return result.rowcount


async def waiting_channels(
    conn: AsyncConnection, platform: Platform, *, now: datetime
) -> set[ChannelRef]:
    """The channels of ``platform`` with a PENDING delivery not yet due (waiting to be retried).

    The dispatcher holds back newer deliveries to such a channel, so that a retry never lets a
    later message overtake an earlier one.
    """
    rows = await conn.execute(
        select(outbox.c.workspace, outbox.c.channel)
        .where(
            outbox.c.platform == str(platform),
            outbox.c.status == str(DeliveryStatus.PENDING),
            outbox.c.next_attempt_at > now,
        )
        .distinct()
    )
    return {ChannelRef(platform, r.workspace, r.channel) for r in rows}


async def next_due(conn: AsyncConnection, platform: Platform) -> datetime | None:
    """The earliest ``next_attempt_at`` of the PENDING deliveries for ``platform``, or ``None``
    when there are none (it may be in the past: something is due now)."""
    at: datetime | None = await conn.scalar(
        select(func.min(outbox.c.next_attempt_at)).where(
            outbox.c.platform == str(platform), outbox.c.status == str(DeliveryStatus.PENDING)
        )
    )
    return at


async def mark_sent(
    conn: AsyncConnection, delivery_id: int, *, platform_message_id: str | None, at: datetime
) -> None:
    """Record that the delivery reached the platform (as message ``platform_message_id``); also
    for one CANCELLED while its request was on its way."""
    await _finish_open(
        conn,
        delivery_id,
        "mark it sent",
        also=DeliveryStatus.CANCELLED,
        status=str(DeliveryStatus.SENT),
        sent_at=at,
        platform_message_id=platform_message_id,
    )


async def mark_retry(
    conn: AsyncConnection,
    delivery_id: int,
    *,
    error: str,
    next_attempt_at: datetime,
    counted: bool = True,
) -> bool:
    """Record a failed send: PENDING again, due at ``next_attempt_at``, and one more attempt
    unless not ``counted`` (a 429). False, changing nothing, when it was CANCELLED meanwhile."""
    return await _finish_open(
        conn,
        delivery_id,
        "retry it",
        status=str(DeliveryStatus.PENDING),
        attempts=outbox.c.attempts + (1 if counted else 0),
        last_error=error,
        next_attempt_at=next_attempt_at,
    )


async def mark_dead(conn: AsyncConnection, delivery_id: int, *, error: str) -> bool:
    """Give up on the delivery (DEAD); a send that was in flight counts as one more attempt.
    False, changing nothing, when it was CANCELLED meanwhile."""
    return await _finish_open(
        conn,
        delivery_id,
        "mark it dead",
        status=str(DeliveryStatus.DEAD),
        attempts=outbox.c.attempts
        + case((outbox.c.status == str(DeliveryStatus.SENDING), 1), else_=0),
        last_error=error,
    )


async def supersede(conn: AsyncConnection, ids: Sequence[int]) -> int:
    """Mark the PENDING deliveries among ``ids`` SUPERSEDED; returns how many were.

    Deliveries already SENDING are not touched: they may be on their way.
    """
    if not ids:
        return 0
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status == str(DeliveryStatus.PENDING))
        .values(status=str(DeliveryStatus.SUPERSEDED))
    )
    return result.rowcount


async def cancel_for_subscription(conn: AsyncConnection, subscription_id: int) -> int:
    """Cancel every open (PENDING or SENDING) delivery of the subscription; returns how many.

    A SENDING one whose request is already on its way still arrives (and is then recorded as
    sent); one waiting for its turn is dropped when its turn comes (:func:`mark_attempt`).
    """
    result = await conn.execute(
        update(outbox)
        .where(
            outbox.c.subscription_id == subscription_id,
            outbox.c.status.in_([str(s) for s in OPEN]),
        )
        .values(status=str(DeliveryStatus.CANCELLED))
    )
    return result.rowcount


async def _select(
    conn: AsyncConnection,
    *where: ColumnElement[bool],
    limit: int | None = None,
    newest: bool = False,
) -> list[Delivery]:
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    order = outbox.c.id.desc() if newest else outbox.c.id.asc()
    rows = await conn.execute(select(outbox).where(*where).order_by(order).limit(limit))
    return [_delivery(row) for row in rows]


async def _finish_open(
    conn: AsyncConnection,
    delivery_id: int,
    doing: str,
    *,
    also: DeliveryStatus | None = None,
    **values: Any,
) -> bool:
    """Update a PENDING or SENDING delivery (or one in status ``also``); False when it was
    CANCELLED (and ``also`` is not that); :class:`StoreError` if it is missing or finished."""
    open_ = [str(s) for s in (*OPEN, *([also] if also is not None else []))]
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.id == delivery_id, outbox.c.status.in_(open_))
        .values(**values)
    )
    if result.rowcount == 1:
        return True
    found = await get(conn, delivery_id)
    if found is None:
        raise StoreError(f"cannot {doing}: there is no delivery {delivery_id}")
    if found.status is DeliveryStatus.CANCELLED:
        return False
    raise StoreError(f"cannot {doing}: delivery {delivery_id} is already {found.status}")
