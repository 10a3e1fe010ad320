"""Subscriptions: which channel gets updates for which count, and how."""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import ColumnElement, Row, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import ReturningInsert

from bot.domain.subscription import ChannelRef, Close, Mode, Platform, Subscription, Wants
from bot.store import outbox
from bot.store.schema import subscriptions
from bot.store.statements import insert_in, require_changed

_t = subscriptions.c


def _subscription(row: Row[Any]) -> Subscription:
    close = None
    if row.close_votes is not None or row.close_tenths is not None:
        close = Close(row.close_votes, row.close_tenths)
    wants = Wants.from_words(
        row.mode,
        close=close,
        mention=row.mention,
        thread=row.thread,
        pin=row.pin,
        publish=row.publish,
        via=row.via,
    )
    return Subscription(
        id=row.id,
        channel=ChannelRef(Platform(row.platform), row.workspace, row.channel),
        count_id=row.count_id,
        wants=wants,
        created_by=row.created_by,
        created_at=row.created_at,
        enabled=row.enabled,
        disabled_reason=row.disabled_reason,
        live_message_id=row.live_message_id,
        thread_message_id=row.thread_message_id,
        follow_webhook=row.follow_webhook,
    )


def _wants_values(wants: Wants) -> dict[str, object]:
    close = wants.close or Close()
    return {
        "mode": wants.words,
        "close_votes": close.votes,
        "close_tenths": close.tenths,
        "mention": wants.mention,
        "thread": wants.thread,
        "pin": wants.pin,
        "publish": wants.publish,
        "via": wants.via,
    }


def _channel_is(channel: ChannelRef) -> list[ColumnElement[bool]]:
    return [
        _t.platform == str(channel.platform),
        _t.workspace == channel.workspace,
        _t.channel == channel.channel,
    ]


@cache
def _insert(dialect: str) -> ReturningInsert[Any]:
    """:func:`put`'s INSERT for ``dialect`` (its values are the execution's parameters), built
    once: building it afresh took most of a subscribe's CPU (a thousand subscribed one by one,
    as a test's fan-out is set up, cost the test process ~0.5 s more)."""
    return (
        insert_in(dialect, subscriptions)
        .on_conflict_do_nothing(index_elements=[_t.platform, _t.workspace, _t.channel, _t.count_id])
        .returning(*subscriptions.c)
    )


async def subscribe(
    conn: AsyncConnection,
    channel: ChannelRef,
    count_id: str,
    wants: Wants | Mode,
    *,
    by: str,
    at: datetime,
    follow_webhook: str | None = None,
) -> tuple[Subscription, bool]:
    """Subscribe ``channel`` to the count, hearing ``wants`` (a plain mode is
    ``Wants.of(mode)``); returns the subscription and whether it is new (:func:`put`)."""
    sub, before = await put(
        conn, channel, count_id, wants, by=by, at=at, follow_webhook=follow_webhook
    )
    return sub, before is None


async def put(
    conn: AsyncConnection,
    channel: ChannelRef,
    count_id: str,
    wants: Wants | Mode,
    *,
    by: str,
    at: datetime,
    follow_webhook: str | None = None,
) -> tuple[Subscription, Subscription | None]:
    """Subscribe ``channel`` to the count, hearing ``wants`` (a plain mode is
    ``Wants.of(mode)``); returns the subscription and what it was before (None: it is new).

    If the channel is already subscribed to the count, that subscription gets ``wants`` and is
    enabled again (its creator, creation time, live message and thread are kept). Safe against
    a concurrent subscribe of the same channel and count. The count must be in the store (else
    the transaction fails with :class:`StoreError`). ``follow_webhook``: what a ``via=`` follow
    made in the channel (None: no follow). A new subscription is one statement (the store is not
    read first: on SQLite every statement waits for the driver's thread).
    """
    if isinstance(wants, Mode):
        wants = Wants.of(wants)
    new = {
        "platform": str(channel.platform),
        "workspace": channel.workspace,
        "channel": channel.channel,
        "count_id": count_id,
        **_wants_values(wants),
        "enabled": True,
        "disabled_reason": None,
        "created_by": by,
        "created_at": at,
        "live_message_id": None,
        "thread_message_id": None,
        "follow_webhook": follow_webhook,
    }
    inserted = (await conn.execute(_insert(conn.dialect.name), new)).first()
    if inserted is not None:
        return _subscription(inserted), None
    before = await find(conn, channel, count_id)
    updated = (
        await conn.execute(
            update(subscriptions)
            .where(*_channel_is(channel), _t.count_id == count_id)
            .values(
                **_wants_values(wants),
                enabled=True,
                disabled_reason=None,
                follow_webhook=follow_webhook,
            )
            .returning(*subscriptions.c)
        )
    ).one()
    return _subscription(updated), before


async def unsubscribe(conn: AsyncConnection, channel: ChannelRef, count_id: str) -> bool:
    """Remove the channel's subscription to the count; returns whether there was one.

    Its open deliveries are cancelled in the same transaction, so nothing more is posted for
    it (a request already on its way still arrives).
    """
    sub_id = await conn.scalar(
        delete(subscriptions).where(*_channel_is(channel), _t.count_id == count_id).returning(_t.id)
    )
    if sub_id is None:
        return False
    await outbox.cancel_for_subscription(conn, int(sub_id))
    return True


async def get(conn: AsyncConnection, sub_id: int) -> Subscription | None:
    """The subscription with id ``sub_id``, or ``None``."""
    row = (await conn.execute(_BY_ID, {"sub_id": sub_id})).first()
    return None if row is None else _subscription(row)


_BY_ID = select(subscriptions).where(_t.id == bindparam("sub_id", type_=_t.id.type))
"""Built once: the courier reads a subscription for every call or final it posts on a
platform that publishes (``bot.delivery.publishing``)."""


_OF_COUNT = select(subscriptions).where(_t.count_id == bindparam("count_id")).order_by(_t.id)
_ENABLED_OF_COUNT = _OF_COUNT.where(_t.enabled.is_(True))
"""Built once: every accepted tally reads them (``bot.store.follows.recipients``)."""


async def for_count(
    conn: AsyncConnection, count_id: str, *, enabled_only: bool = True
) -> list[Subscription]:
    """The count's subscriptions (only the enabled ones unless ``enabled_only=False``), by id."""
    stmt = _ENABLED_OF_COUNT if enabled_only else _OF_COUNT
    return [_subscription(row) for row in await conn.execute(stmt, {"count_id": count_id})]


async def for_channel(conn: AsyncConnection, channel: ChannelRef) -> list[Subscription]:
    """Every subscription of ``channel``, enabled or not, by id."""
    stmt = select(subscriptions).where(*_channel_is(channel)).order_by(_t.id)
    return [_subscription(row) for row in await conn.execute(stmt)]


async def disable(conn: AsyncConnection, sub_id: int, reason: str) -> None:
    """Stop the subscription (kept, with ``reason``) and cancel its open deliveries;
    :class:`StoreError` if there is none."""
    result = await conn.execute(
        update(subscriptions).where(_t.id == sub_id).values(enabled=False, disabled_reason=reason)
    )
    require_changed(result, f"subscription {sub_id}")
    await outbox.cancel_for_subscription(conn, sub_id)


async def set_live_message(conn: AsyncConnection, sub_id: int, message_id: str | None) -> None:
    """Remember (or with ``None`` forget) the subscription's live scoreboard message."""
    result = await conn.execute(
        update(subscriptions).where(_t.id == sub_id).values(live_message_id=message_id)
    )
    require_changed(result, f"subscription {sub_id}")


async def find(conn: AsyncConnection, channel: ChannelRef, count_id: str) -> Subscription | None:
    """The channel's subscription to the count, or ``None``."""
    row = (
        await conn.execute(
            select(subscriptions).where(*_channel_is(channel), _t.count_id == count_id)
        )
    ).first()
    return None if row is None else _subscription(row)


async def set_thread_message(conn: AsyncConnection, sub_id: int, message_id: str | None) -> None:
    """Remember (or with ``None`` forget) the parent message of the subscription's thread."""
    result = await conn.execute(
        update(subscriptions).where(_t.id == sub_id).values(thread_message_id=message_id)
    )
    require_changed(result, f"subscription {sub_id}")


async def set_wants(conn: AsyncConnection, sub_id: int, wants: Wants) -> None:
    """Change what the subscription hears (an option the platform refused is turned off)."""
    result = await conn.execute(
        update(subscriptions).where(_t.id == sub_id).values(**_wants_values(wants))
    )
    require_changed(result, f"subscription {sub_id}")
