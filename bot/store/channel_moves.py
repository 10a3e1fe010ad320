"""A channel that got a new id on its platform (a Telegram group that became a supergroup): its
subscriptions, and the deliveries still on their way to it, move to the new id, audited.

The old place is gone for good (the platform answers every request there with the new id), so:

- each subscription of the old channel becomes one of the new channel, with what it hears,
  who made it and whether it is enabled kept; its live scoreboard and thread parent are
  forgotten (their ids belong to the old place: the next post starts a new scoreboard), unless
  the new channel already had a subscription to the same count, which then stays as it is
  (the old one is removed);
- every open delivery of the old channel goes to the new one, due now and no longer in doubt
  (anything an attempt may have posted is in the old place, which nobody reads any more);
- one audit entry per move, by the platform, with how many subscriptions moved.

Moving twice (the platform's error answer and its service message both tell of it) moves
nothing the second time.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.subscription import ChannelRef
from bot.errors import ChannelMoved
from bot.store import audit
from bot.store.audit import AuditEntry
from bot.store.outbox import OPEN, Delivery, release
from bot.store.schema import outbox, subscriptions

log = logging.getLogger("bot.delivery.worker")


async def move_channel(
    conn: AsyncConnection, old: ChannelRef, new: ChannelRef, *, at: datetime, why: str
) -> int:
    """Move ``old``'s subscriptions and open deliveries to ``new`` (see the module docstring);
    the number of subscriptions moved."""
    if old.platform != new.platform:
        raise ValueError("a channel moves within its platform")
    subs = subscriptions.c
    here = and_(
        subs.platform == str(old.platform),
        subs.workspace == old.workspace,
        subs.channel == old.channel,
    )
    there = and_(
        subs.platform == str(new.platform),
        subs.workspace == new.workspace,
        subs.channel == new.channel,
    )
    taken = set((await conn.scalars(select(subs.count_id).where(there))).all())
    moved = 0
    rows = (await conn.execute(select(subs.id, subs.count_id).where(here))).all()
    for sub_id, count_id in rows:
        if count_id in taken:
            await conn.execute(
                update(outbox)
                .where(
                    outbox.c.subscription_id == sub_id, outbox.c.status.in_([s.value for s in OPEN])
                )
                .values(subscription_id=await _sub_id(conn, there, count_id))
            )
            await conn.execute(delete(subscriptions).where(subs.id == sub_id))
            continue
        await conn.execute(
            update(subscriptions)
            .where(subs.id == sub_id)
            .values(
                workspace=new.workspace,
                channel=new.channel,
                live_message_id=None,
                thread_message_id=None,
            )
        )
        moved += 1
    box = outbox.c
    await conn.execute(
        update(outbox)
        .where(
            box.platform == str(old.platform),
            box.workspace == old.workspace,
            box.channel == old.channel,
            box.status.in_([s.value for s in OPEN]),
        )
        .values(workspace=new.workspace, channel=new.channel, sending_at=None, next_attempt_at=at)
    )
    if rows:
        await audit.record(
            conn,
            AuditEntry(
                at=at,
                actor=f"{old.platform}:platform",
                action="move channel",
                old=str(old),
                new=str(new),
                detail=f"{why}; {moved} subscription(s) moved, {len(rows) - moved} merged"[:500],
            ),
        )
    return moved


async def follow(conn: AsyncConnection, d: Delivery, exc: ChannelMoved, *, at: datetime) -> None:
    """The courier's part: ``d`` was refused because its channel moved (``exc`` says where);
    the channel moves, and ``d`` (claimed) goes back to the queue, due there now."""
    new = replace(d.channel, workspace=exc.workspace, channel=exc.channel)
    await move_channel(conn, d.channel, new, at=at, why=str(exc))
    await release(conn, [d.id])
    log.warning("the channel %s moved to %s: delivering there", d.channel, new)


async def _sub_id(conn: AsyncConnection, there: ColumnElement[bool], count_id: str) -> int:
    found = await conn.scalar(
        select(subscriptions.c.id).where(there, subscriptions.c.count_id == count_id)
    )
    assert found is not None
    return int(found)
