"""The outbox's deliveries and the queue: what a delivery is, queueing, and the reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import ColumnElement, Row, func, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.subscription import ChannelRef, Platform
from bot.errors import StoreError
from bot.store.schema import outbox


class DeliveryAction(StrEnum):
    POST = "post"
    """Post a new message."""
    EDIT_LIVE = "edit_live"
    """Edit the subscription's live scoreboard message in place."""
    ALERT = "alert"
    """Post an alert (e.g. to an admin channel)."""
    REPLY = "reply"
    """Post into the subscription's thread (its ``thread`` option; a final also shows in the
    channel)."""
    DIRECT = "direct"
    """Post to a person's direct messages (a follow, ``bot.domain.follow``): a POST whose
    ``subscription_id`` is the follow's id."""
    CHART = "chart"
    """Show a final's chart with its message, already posted and recorded SENT, on a platform
    that shows it with requests of its own (Slack's upload into the message's thread); queued
    when the post is recorded (``bot.delivery.final_charts.chart_step``)."""
    PUBLISH = "publish"
    """Publish a call or a final, already posted and recorded SENT, to every channel that
    follows its announcement channel (Discord's crosspost; ``bot.delivery.publishing``)."""


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
    claimed_by: str | None = None
    """The instance whose claim it is under while SENDING (revision 0008)."""
    claim_expires_at: datetime | None = None
    member: str | None = None
    """A follower's ``DIRECT`` message that may go only to a member of the place the follow was
    made in (its count is that place's own and not public): the person's id, read with the
    claim (``bot.store.sight.member_of``), never stored; None otherwise, and on a delivery
    read other than by a claim."""


def _delivery(row: Row[Any], member: str | None = None) -> Delivery:
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
        claimed_by=row.claimed_by,
        claim_expires_at=row.claim_expires_at,
        member=member,
    )


_INSERT = insert(outbox)
_INSERT_RETURNING = _INSERT.returning(outbox.c.id, sort_by_parameter_order=True)
_LAST_ID = select(func.coalesce(func.max(outbox.c.id), 0))
"""Built once: every accepted tally with subscribers queues (:func:`enqueue`)."""


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
        result = await conn.execute(_INSERT_RETURNING, rows)
        return [int(new_id) for new_id in result.scalars()]
    # SQLite does not promise the order of RETURNING (SQLAlchemy would fall back to one INSERT
    # per row) and compiling a many-row VALUES is slow. But it gives each new row the rowid
    # max(id) + 1, and a store transaction on SQLite holds the write lock from its start
    # (BEGIN IMMEDIATE), so one executemany of a prepared INSERT yields max+1 .. max+n in order.
    before = int(await conn.scalar(_LAST_ID) or 0)
    await conn.execute(_INSERT, rows)
    after = int(await conn.scalar(_LAST_ID) or 0)
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


async def pending_alerts(conn: AsyncConnection, channel: ChannelRef) -> list[Delivery]:
    """The alerts to ``channel`` still PENDING with no request gone out, oldest first."""
    return await _select(
        conn,
        outbox.c.platform == str(channel.platform),
        outbox.c.workspace == channel.workspace,
        outbox.c.channel == channel.channel,
        outbox.c.action == str(DeliveryAction.ALERT),
        outbox.c.status == str(DeliveryStatus.PENDING),
        outbox.c.sending_at.is_(None),
    )


async def alerts_since(conn: AsyncConnection, count_id: str, since: datetime) -> list[Delivery]:
    """The alerts about ``count_id`` queued at ``since`` or later, whatever became of them
    (what tells whether a like alert was already given within a window)."""
    return await _select(
        conn,
        outbox.c.count_id == count_id,
        outbox.c.action == str(DeliveryAction.ALERT),
        outbox.c.created_at >= since,
    )


async def published_since(conn: AsyncConnection, channel: ChannelRef, since: datetime) -> int:
    """How many messages of ``channel`` were published (``PUBLISH`` steps that went out) at
    ``since`` or later, or are on their way now: what counts against the platform's hourly
    bound on publishing."""
    return int(
        await conn.scalar(
            select(func.count())
            .select_from(outbox)
            .where(
                outbox.c.platform == str(channel.platform),
                outbox.c.workspace == channel.workspace,
                outbox.c.channel == channel.channel,
                outbox.c.action == str(DeliveryAction.PUBLISH),
                or_(
                    (outbox.c.status == str(DeliveryStatus.SENT)) & (outbox.c.sent_at >= since),
                    (outbox.c.status == str(DeliveryStatus.SENDING))
                    & (outbox.c.sending_at.is_not(None)),
                ),
            )
        )
        or 0
    )


async def in_doubt(
    conn: AsyncConnection,
    platform: Platform,
    *,
    instance: str | None = None,
    now: datetime | None = None,
) -> list[Delivery]:
    """The deliveries for ``platform`` left SENDING (e.g. by a crash mid-send), oldest first.

    With ``instance`` (several instances share the store), only those an instance starting as
    ``instance`` at ``now`` may take as its own cut-off sends: its own claims (a restart under
    the same id), claims that expired before ``now`` and unclaimed ones; never another live
    instance's."""
    where = [outbox.c.platform == str(platform), outbox.c.status == str(DeliveryStatus.SENDING)]
    if instance is not None:
        if now is None:
            raise ValueError("in_doubt(instance=...) needs now")
        where.append(
            or_(
                outbox.c.claimed_by == instance,
                outbox.c.claimed_by.is_(None),
                outbox.c.claim_expires_at < now,
            )
        )
    return await _select(conn, *where)


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


async def open_updates(conn: AsyncConnection, platform: Platform) -> set[tuple[str, int | None]]:
    """The (count, update) pairs that still have open deliveries on ``platform``."""
    rows = await conn.execute(
        select(outbox.c.count_id, outbox.c.tally_seq)
        .where(outbox.c.platform == str(platform), outbox.c.status.in_([str(s) for s in OPEN]))
        .distinct()
    )
    return {(r.count_id, r.tally_seq) for r in rows}


async def next_due(conn: AsyncConnection, platform: Platform) -> datetime | None:
    """The earliest ``next_attempt_at`` of the PENDING deliveries for ``platform``, or ``None``
    when there are none (it may be in the past: something is due now)."""
    at: datetime | None = await conn.scalar(
        select(func.min(outbox.c.next_attempt_at)).where(
            outbox.c.platform == str(platform), outbox.c.status == str(DeliveryStatus.PENDING)
        )
    )
    return at


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
