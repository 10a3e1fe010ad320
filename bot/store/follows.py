"""Follows: people who get a count's messages by direct message (``bot.domain.follow``), and
the recipients of a count's messages (:func:`recipients`: its channels and its followers), the
one query every sender of a count's messages reads (the pipeline's updates, reminders)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Row, delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.follow import Follow
from bot.domain.subscription import ChannelRef, Close, Platform, Subscription, Wants
from bot.store import audit, outbox
from bot.store import subscriptions as sub_rows
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.store.schema import follows
from bot.store.sight import seen
from bot.store.statements import insert_for

_t = follows.c


def _follow(row: Row[Any]) -> Follow:
    close = None
    if row.close_votes is not None or row.close_tenths is not None:
        close = Close(row.close_votes, row.close_tenths)
    platform = Platform(row.platform)
    return Follow(
        id=row.id,
        platform=platform,
        user_id=row.user_id,
        count_id=row.count_id,
        place=ChannelRef(platform, row.workspace, row.channel),
        inbox=row.inbox,
        wants=Wants.from_words(row.mode, close=close),
        created_at=row.created_at,
    )


def _values(wants: Wants) -> dict[str, object]:
    close = wants.close or Close()
    return {"mode": wants.words, "close_votes": close.votes, "close_tenths": close.tenths}


async def follow(
    conn: AsyncConnection,
    place: ChannelRef,
    user_id: str,
    count_id: str,
    wants: Wants,
    *,
    inbox: str,
    at: datetime,
) -> tuple[Follow, Follow | None]:
    """``user_id`` of ``place``'s platform follows the count, hearing ``wants``, by direct
    message to ``inbox``; returns the follow and what it was before (None: new). One follow of
    a count per person on a platform: following again (from anywhere) changes it, and its place
    becomes this one. Safe against a concurrent follow of the same person and count."""
    platform = str(place.platform)
    before = await find(conn, place.platform, user_id, count_id)
    changed = {
        "workspace": place.workspace,
        "channel": place.channel,
        "inbox": inbox,
        **_values(wants),
    }
    row = (
        await conn.execute(
            insert_for(conn, follows)
            .values(platform=platform, user_id=user_id, count_id=count_id, created_at=at, **changed)
            .on_conflict_do_update(
                index_elements=[_t.platform, _t.user_id, _t.count_id], set_=changed
            )
            .returning(*follows.c)
        )
    ).one()
    return _follow(row), before


async def find(
    conn: AsyncConnection, platform: Platform, user_id: str, count_id: str
) -> Follow | None:
    row = (
        await conn.execute(
            select(follows).where(
                _t.platform == str(platform), _t.user_id == user_id, _t.count_id == count_id
            )
        )
    ).first()
    return None if row is None else _follow(row)


async def get(conn: AsyncConnection, follow_id: int) -> Follow | None:
    row = (await conn.execute(select(follows).where(_t.id == follow_id))).first()
    return None if row is None else _follow(row)


async def unfollow(conn: AsyncConnection, follow_id: int) -> bool:
    """Remove the follow and cancel its open deliveries; whether there was one."""
    gone = await conn.scalar(delete(follows).where(_t.id == follow_id).returning(_t.id))
    if gone is None:
        return False
    await outbox.cancel_for_subscription(conn, follow_id, direct=True)
    return True


async def drop(conn: AsyncConnection, made: Follow, *, at: datetime, why: str) -> bool:
    """Unfollow ``made`` on the person's behalf (they blocked the bot, left the place): as
    :func:`unfollow`, audited as tallybot's action with ``why``; whether it was still there."""
    if not await unfollow(conn, made.id):
        return False
    entry = AuditEntry(
        at, "tallybot", "unfollow", made.count_id, made.wants.grammar(), None, True,
        f"{made.platform}:{made.user_id} unfollowed: {why}",
    )  # fmt: skip
    await audit.record(conn, entry)
    return True


async def left(
    conn: AsyncConnection, platform: Platform, workspace: str, user_id: str, *, at: datetime,
    why: str,
) -> list[Follow]:  # fmt: skip
    """The person left ``workspace`` (the platform says so): the follows they made there are
    dropped (:func:`drop`); those dropped. Their follows made elsewhere stay."""
    stmt = select(follows).where(
        _t.platform == str(platform), _t.user_id == user_id, _t.workspace == workspace
    )
    made = [_follow(row) for row in await conn.execute(stmt.order_by(_t.id))]
    return [f for f in made if await drop(conn, f, at=at, why=why)]


async def of_person(conn: AsyncConnection, platform: Platform, user_id: str) -> list[Follow]:
    """The person's follows on ``platform``, by count."""
    stmt = (
        select(follows)
        .where(_t.platform == str(platform), _t.user_id == user_id)
        .order_by(_t.count_id)
    )
    return [_follow(row) for row in await conn.execute(stmt)]


async def how_many(conn: AsyncConnection, *, count_id: str | None = None, **person: str) -> int:
    """Follows of the count (``count_id``), or of a person (``platform=``, ``user_id=``)."""
    stmt = select(func.count()).select_from(follows)
    if count_id is not None:
        stmt = stmt.where(_t.count_id == count_id)
    for key, value in person.items():
        stmt = stmt.where(_t[key] == value)
    return int(await conn.scalar(stmt) or 0)


async def for_count(conn: AsyncConnection, count_id: str) -> list[Follow]:
    stmt = select(follows).where(_t.count_id == count_id).order_by(_t.id)
    return [_follow(row) for row in await conn.execute(stmt)]


async def delete_for_count(conn: AsyncConnection, count_id: str) -> None:
    """Forget the count's follows (the count is deleted)."""
    await conn.execute(delete(follows).where(_t.count_id == count_id))


async def recipients(conn: AsyncConnection, count_id: str) -> list[Subscription]:
    """Who gets a message for the count: its enabled channel subscriptions, then its
    followers whose place still sees the count (``bot.store.sight``; ``Subscription.direct``,
    their DM channel as ``channel``). What each hears is
    its ``wants``: a sender selects by it (``bot.ingest.pipeline.plan``) and queues with
    :func:`delivery`."""
    subs = await sub_rows.for_count(conn, count_id)
    stmt = select(follows).where(_t.count_id == count_id, seen()).order_by(_t.id)
    return subs + [_follow(row).recipient for row in await conn.execute(stmt)]


def delivery(
    sub: Subscription,
    action: DeliveryAction,
    *,
    tally_seq: int | None,
    significant: bool,
    payload: str,
    at: datetime,
) -> NewDelivery:
    """A delivery of a count's message to one recipient of :func:`recipients`: a follow's
    (``direct``) is a ``DIRECT`` post to the person's DM channel, whatever the channel's
    action would be."""
    return NewDelivery(
        subscription_id=sub.id,
        channel=sub.channel,
        count_id=sub.count_id,
        tally_seq=tally_seq,
        action=DeliveryAction.DIRECT if sub.direct else action,
        significant=significant,
        payload=payload,
        created_at=at,
    )
