"""Moving deliveries along: claimed, attempted, released, sent, retried, dead, superseded,
cancelled. Each change applies only to a delivery in the status it expects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import Any

from sqlalchemy import ColumnElement, and_, bindparam, case, exists, func, or_, update
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import ReturningUpdate

from bot.errors import StoreError
from bot.store.outbox.queue import OPEN, DeliveryAction, DeliveryStatus, get
from bot.store.schema import follows, outbox, subscriptions
from bot.store.sight import seen


async def mark_sending(
    conn: AsyncConnection,
    ids: Sequence[int],
    *,
    at: datetime | None = None,
    by: str | None = None,
    until: datetime | None = None,
) -> int:
    """Claim the PENDING deliveries among ``ids`` for sending; returns how many were claimed.

    With ``at``, also record that the send starts now (see :func:`mark_attempt`); without it,
    ``sending_at`` is left as it was. ``by``: the instance claiming them, its claim good
    ``until`` (``bot.store.outbox.claims``). Deliveries that are not PENDING (another worker
    claimed them, or they were superseded) are left alone, so a caller should only send the
    claimed ones when the count falls short.
    """
    if not ids:
        return 0
    values: dict[str, object] = {
        "status": str(DeliveryStatus.SENDING),
        "claimed_by": by,
        "claim_expires_at": until,
    }
    if at is not None:
        values["sending_at"] = at
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.id.in_(list(ids)), outbox.c.status == str(DeliveryStatus.PENDING))
        .values(**values)
    )
    return result.rowcount


async def mark_attempt(
    conn: AsyncConnection, delivery_id: int, *, at: datetime, by: str | None = None
) -> bool:
    """Record, right before its request goes out, that a claimed delivery may reach the platform
    from now on; False (nothing to send) when it must not go out any more.

    It must not when it is no longer SENDING (its subscription was removed meanwhile and took
    it along) or when its subscription is gone or disabled (it is CANCELLED here). A delivery
    still SENDING with ``sending_at`` set after a crash may have reached the platform; one with
    ``sending_at`` unset was claimed but never tried. ``sending_at`` keeps the first attempt's
    time: from then on an earlier copy may exist. With ``by``, only while the claim is still
    that instance's (one that expired may have been taken over: then it must not go out).
    """
    return delivery_id in await mark_attempts(conn, [delivery_id], at=at, by=by)


async def mark_attempts(
    conn: AsyncConnection, ids: Sequence[int], *, at: datetime, by: str | None = None
) -> set[int]:
    """:func:`mark_attempt` for several deliveries in one statement (those to drop CANCELLED,
    the others' attempt noted); those that may go out."""
    if not ids:
        return set()
    params: dict[str, object] = {"ids": list(ids), "at": at}
    if by is not None:
        params["by"] = by
    rows = await conn.execute(_attempts(by is not None), params)
    return {int(r.id) for r in rows if r.status == str(DeliveryStatus.SENDING)}


@cache
def _attempts(claimed: bool) -> ReturningUpdate[tuple[int, str]]:
    """The statement of :func:`mark_attempts` (``claimed``: under the claim ``by``), built once:
    it is run for every delivery sent (its parameters ``ids``, ``at``, ``by``)."""
    mine = and_(
        outbox.c.id.in_(bindparam("ids", expanding=True)),
        outbox.c.status == str(DeliveryStatus.SENDING),
    )
    if claimed:
        mine = and_(mine, outbox.c.claimed_by == bindparam("by", type_=outbox.c.claimed_by.type))
    orphaned = _orphaned()  # read on the row as it was: both columns agree
    at = bindparam("at", type_=outbox.c.sending_at.type)
    return (
        update(outbox)
        .where(mine)
        .values(
            status=case((orphaned, str(DeliveryStatus.CANCELLED)), else_=outbox.c.status),
            sending_at=case(
                (orphaned, outbox.c.sending_at), else_=func.coalesce(outbox.c.sending_at, at)
            ),
        )
        .returning(outbox.c.id, outbox.c.status)
    )


async def unmark_attempt(conn: AsyncConnection, delivery_id: int, *, by: str | None = None) -> bool:
    """The attempt :func:`mark_attempt` noted surely did not reach the platform (it refused the
    request, a 429) and no earlier one had been noted: the delivery is not in doubt any more
    (``sending_at`` unset). Only while it is SENDING (under ``by``'s claim); whether it was."""
    mine = and_(outbox.c.id == delivery_id, outbox.c.status == str(DeliveryStatus.SENDING))
    if by is not None:
        mine = and_(mine, outbox.c.claimed_by == by)
    result = await conn.execute(update(outbox).where(mine).values(sending_at=None))
    return result.rowcount == 1


def _direct() -> ColumnElement[bool]:
    return outbox.c.action == str(DeliveryAction.DIRECT)


def _orphaned() -> ColumnElement[bool]:
    """The delivery belongs to a subscription that is gone or disabled, or to a follow that is
    gone or whose place no longer sees its count (a ``DIRECT`` delivery's ``subscription_id``
    is its follow's; ``bot.store.sight``)."""
    direct = _direct()
    live = exists().where(
        subscriptions.c.id == outbox.c.subscription_id, subscriptions.c.enabled.is_(True)
    )
    followed = exists().where(follows.c.id == outbox.c.subscription_id, seen())
    return and_(
        outbox.c.subscription_id.is_not(None),
        or_(and_(~direct, ~live), and_(direct, ~followed)),
    )


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
        .values(status=str(DeliveryStatus.PENDING), claimed_by=None, claim_expires_at=None)
    )
    return result.rowcount


async def mark_sent(
    conn: AsyncConnection, delivery_id: int, *, platform_message_id: str | None, at: datetime
) -> None:
    """Record that the delivery reached the platform (as message ``platform_message_id``); also
    for one CANCELLED while its request was on its way."""
    failed = await mark_sent_many(conn, {delivery_id: platform_message_id}, at=at)
    if delivery_id in failed:
        raise failed[delivery_id]


async def mark_sent_many(
    conn: AsyncConnection, sent: Mapping[int, str | None], *, at: datetime
) -> dict[int, StoreError]:
    """:func:`mark_sent` for several deliveries (by id, their message ids) in one statement;
    the :class:`StoreError` of each that could not be (missing or finished), the others
    recorded all the same."""
    if not sent:
        return {}
    named = [(i, m) for i, m in sent.items() if m is not None]
    params: dict[str, object] = {"ids": list(sent), "at": at}
    for k, (i, m) in enumerate(named):
        params[f"i{k}"], params[f"m{k}"] = i, m
    rows = await conn.execute(_sent(len(named)), params)
    done = {int(r.id) for r in rows}
    failed: dict[int, StoreError] = {}
    for i in sent:
        if i not in done:
            found = await get(conn, i)
            why = (
                f"delivery {i} is already {found.status}" if found else f"there is no delivery {i}"
            )
            failed[i] = StoreError(f"cannot mark it sent: {why}")
    return failed


@lru_cache(maxsize=64)
def _sent(named: int) -> ReturningUpdate[tuple[int]]:
    """The statement of :func:`mark_sent_many` for ``named`` deliveries with a message id (its
    parameters ``ids``, ``at`` and each one's ``i<k>``, ``m<k>``), built once per size: it is
    run for every batch of deliveries sent, and building it afresh (and its cache key, and its
    compilation at each new size) took more of the bot's CPU than any other statement."""
    message_id = (
        case(
            *(
                (
                    outbox.c.id == bindparam(f"i{k}", type_=outbox.c.id.type),
                    bindparam(f"m{k}", type_=outbox.c.platform_message_id.type),
                )
                for k in range(named)
            ),
            else_=None,
        )
        if named
        else None
    )
    return (
        update(outbox)
        .where(
            outbox.c.id.in_(bindparam("ids", expanding=True)),
            outbox.c.status.in_([str(s) for s in (*OPEN, DeliveryStatus.CANCELLED)]),
        )
        .values(
            status=str(DeliveryStatus.SENT),
            sent_at=bindparam("at", type_=outbox.c.sent_at.type),
            platform_message_id=message_id,
        )
        .returning(outbox.c.id)
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


async def give_way(conn: AsyncConnection, delivery_id: int, *, reason: str) -> bool:
    """A claimed delivery that is not to go out after all, and is no failure (a call's publish
    giving way to the final's, under the platform's hourly bound): SUPERSEDED, ``reason`` kept
    as its last error. False, changing nothing, when it was CANCELLED meanwhile."""
    return await _finish_open(
        conn,
        delivery_id,
        "let it give way",
        status=str(DeliveryStatus.SUPERSEDED),
        last_error=reason,
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


async def cancel_for_subscription(
    conn: AsyncConnection, subscription_id: int, *, direct: bool = False
) -> int:
    """Cancel every open (PENDING or SENDING) delivery of the subscription (``direct``: of the
    follow with that id); returns how many.

    A SENDING one whose request is already on its way still arrives (and is then recorded as
    sent); one waiting for its turn is dropped when its turn comes (:func:`mark_attempt`).
    """
    result = await conn.execute(
        update(outbox)
        .where(
            outbox.c.subscription_id == subscription_id,
            _direct() if direct else ~_direct(),
            outbox.c.status.in_([str(s) for s in OPEN]),
        )
        .values(status=str(DeliveryStatus.CANCELLED))
    )
    return result.rowcount


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


async def revise(conn: AsyncConnection, delivery_id: int, payload: str) -> bool:
    """Give a PENDING delivery, none of whose requests has gone out, a new payload (an alert
    that now tells of more channels); False when it has left PENDING or been attempted."""
    result = await conn.execute(
        update(outbox)
        .where(
            outbox.c.id == delivery_id,
            outbox.c.status == str(DeliveryStatus.PENDING),
            outbox.c.sending_at.is_(None),
        )
        .values(payload=payload)
    )
    return result.rowcount == 1


async def hold(conn: AsyncConnection, delivery_id: int, *, until: datetime) -> None:
    """A PENDING delivery goes no sooner than ``until``."""
    await conn.execute(
        update(outbox)
        .where(outbox.c.id == delivery_id, outbox.c.status == str(DeliveryStatus.PENDING))
        .values(next_attempt_at=until)
    )
