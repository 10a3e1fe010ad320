"""Schedules: when a count starts or resumes, and the reminders queued before (revision 0018).

A count has at most one scheduled time (``bot.domain.schedule.Schedule``). Its reminder is
queued exactly once per count, kind and time: :func:`claim_reminder` writes the ``reminders``
row and the reminder's deliveries in one transaction, and the row's key makes a second claim
(another instance, a restart, a retry after a crash) insert nothing. Whoever hears a reminder
is chosen by one function, :func:`reminder_deliveries`: the count's recipients that hear
``remind`` (channels that subscribed with it, people who follow with it, by direct message).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.schedule import Schedule, When
from bot.store import follows as follow_rows
from bot.store import outbox
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.store.schema import reminders, schedules
from bot.store.statements import insert_for

_t = schedules.c


def _schedule(row: Row[Any]) -> Schedule:
    lead = None if row.remind_before is None else timedelta(seconds=row.remind_before)
    return Schedule(row.count_id, When(row.kind), row.at, lead, row.moved_from)


async def get(conn: AsyncConnection, count_id: str) -> Schedule | None:
    """The count's scheduled time, if it has one."""
    row = (await conn.execute(select(schedules).where(_t.count_id == count_id))).first()
    return None if row is None else _schedule(row)


async def every(conn: AsyncConnection) -> list[Schedule]:
    """Every count's scheduled time, soonest first."""
    rows = await conn.execute(select(schedules).order_by(_t.at, _t.count_id))
    return [_schedule(row) for row in rows]


async def put(conn: AsyncConnection, schedule: Schedule, *, by: str, at: datetime) -> Schedule:
    """Schedule the count (replacing its scheduled time) at ``at``; the schedule as stored: a
    time changed before it came keeps the one before in ``moved_from`` (its reminder says it
    moved)."""
    before = await get(conn, schedule.count_id)
    moved = None
    if before is not None and before.kind is schedule.kind and at < before.at != schedule.at:
        moved = before.at  # a time still ahead, changed (one that came is not "moved")
    stored = Schedule(schedule.count_id, schedule.kind, schedule.at, schedule.remind_before, moved)
    lead = schedule.remind_before
    values = {
        "count_id": schedule.count_id,
        "kind": str(schedule.kind),
        "at": schedule.at,
        "remind_before": None if lead is None else int(lead.total_seconds()),
        "moved_from": moved,
        "set_by": by,
        "set_at": at,
    }
    stmt = insert_for(conn, schedules).values(values)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[_t.count_id],
            set_={k: stmt.excluded[k] for k in values if k != "count_id"},
        )
    )
    return stored


async def clear(conn: AsyncConnection, count_id: str) -> Schedule | None:
    """Remove the count's scheduled time; the one it had, if any."""
    before = await get(conn, count_id)
    await conn.execute(delete(schedules).where(_t.count_id == count_id))
    return before


async def reminder_deliveries(
    conn: AsyncConnection, count_id: str, payload: str, now: datetime
) -> list[NewDelivery]:
    """The deliveries of one reminder of ``count_id``: one to each recipient of the count that
    hears ``remind`` (``bot.store.follows.recipients``, the one query of a count's recipients:
    its channels' subscriptions and its followers, a follower's by direct message)."""
    return [
        follow_rows.delivery(
            sub,
            DeliveryAction.POST,
            tally_seq=None,
            significant=True,
            payload=payload,
            at=now,
        )
        for sub in await follow_rows.recipients(conn, count_id)
        if sub.wants.reminds
    ]


async def claim_reminder(
    conn: AsyncConnection, schedule: Schedule, payload: str, now: datetime
) -> list[NewDelivery] | None:
    """Queue ``schedule``'s reminder (its deliveries with ``payload``), unless it was queued
    already: the deliveries queued, or None when another claim came first. Call it in a transaction:
    the row and the deliveries are written together or not at all."""
    stmt = insert_for(conn, reminders).values(
        count_id=schedule.count_id,
        kind=str(schedule.kind),
        at=schedule.at,
        queued_at=now,
        deliveries=0,
    )
    result = await conn.execute(stmt.on_conflict_do_nothing())
    if result.rowcount != 1:
        return None
    items = await reminder_deliveries(conn, schedule.count_id, payload, now)
    ids = await outbox.enqueue(conn, items)
    await conn.execute(
        reminders.update()
        .where(
            reminders.c.count_id == schedule.count_id,
            reminders.c.kind == str(schedule.kind),
            reminders.c.at == schedule.at,
        )
        .values(deliveries=len(ids))
    )
    return items


async def claimed(conn: AsyncConnection, count_id: str) -> Sequence[tuple[When, datetime, int]]:
    """The reminders queued for ``count_id``: kind, time and how many deliveries, oldest first."""
    rows = await conn.execute(
        select(reminders.c.kind, reminders.c.at, reminders.c.deliveries)
        .where(reminders.c.count_id == count_id)
        .order_by(reminders.c.at)
    )
    return [(When(r.kind), r.at, r.deliveries) for r in rows]
