"""Tallies: the accepted history of each count, and the tallies that were turned away."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, bindparam, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.model import Tally, TallyState
from bot.errors import StoreError
from bot.store import counts as count_rows
from bot.store.codec import tally_from_json, tally_to_json, votes_from_json, votes_to_json
from bot.store.schema import rejected_tallies, tallies
from bot.store.statements import check_limit


@dataclass(frozen=True, slots=True)
class RejectedTally:
    """A tally that was not accepted, kept as it arrived with the reason."""

    id: int
    count_id: str
    tally: Tally
    reason: str
    """A short code, e.g. ``"decreased"`` or ``"unknown-choice"``."""
    detail: str
    at: datetime


def _tally(row: Row[Any]) -> Tally:
    return Tally(
        count_id=row.count_id,
        votes=votes_from_json(row.votes),
        observed_at=row.observed_at,
        source=row.source,
        void=row.void,
        challenged=row.challenged,
        received=row.received,
        state=TallyState(row.state),
        seq=row.seq,
        correction=row.correction,
        sustained=row.sustained,
        headline=row.headline or "",
    )


async def append(conn: AsyncConnection, tally: Tally) -> Tally:
    """Accept ``tally`` as the count's next one and return it with its ``seq``: the count's row
    locked (:func:`bot.store.counts.lock`), then :func:`append_after` its last tally.

    Concurrent appends for one count get distinct, gapless numbers. Raises
    :class:`StoreError` if the count is not in the store.
    """
    if await count_rows.lock(conn, tally.count_id) is None:
        raise StoreError(f"cannot add a tally to count {tally.count_id!r}: it is not in the store")
    return await append_after(conn, await last(conn, tally.count_id), tally)


_INSERT = insert(tallies)


async def append_after(
    conn: AsyncConnection,
    previous: Tally | None,
    tally: Tally,
    *,
    returning: ColumnElement[Any] | None = None,
) -> Tally:
    """Store ``tally`` after ``previous``, the count's last tally (None: it has none), in one
    INSERT, and return it with its ``seq``: 1 for a count's first tally, one more than
    ``previous``'s otherwise (the ``seq`` on ``tally`` is ignored). Its ``headline`` is the one
    it was published with, kept as published: a later edit of the count's settings never
    rewords it.

    ``previous`` must have been read under the count's lock (:func:`bot.store.counts.lock`) in
    this transaction: then no other tally can come between them (a second writer of the count
    waits for the lock, then reads this one as its last). ``returning``: an expression the
    INSERT also evaluates (``bot.store.notices.announcement``: one statement, not two).
    """
    stored = tally.with_seq(1 if previous is None else previous.seq + 1)
    stmt = _INSERT if returning is None else _INSERT.returning(returning)
    await conn.execute(
        stmt,
        {
            "count_id": stored.count_id,
            "seq": stored.seq,
            "votes": votes_to_json(stored.votes),
            "observed_at": stored.observed_at,
            "source": stored.source,
            "void": stored.void,
            "challenged": stored.challenged,
            "received": stored.received,
            "state": str(stored.state),
            "correction": stored.correction,
            "sustained": stored.sustained,
            "headline": stored.headline or None,
        },
    )
    return stored


_LAST = (
    select(tallies)
    .where(tallies.c.count_id == bindparam("count_id"))
    .order_by(tallies.c.seq.desc())
    .limit(1)
)


async def last(conn: AsyncConnection, count_id: str) -> Tally | None:
    """The count's latest accepted tally (highest ``seq``), or ``None``."""
    row = (await conn.execute(_LAST, {"count_id": count_id})).first()
    return None if row is None else _tally(row)


async def history(
    conn: AsyncConnection, count_id: str, *, limit: int = 50, through: int | None = None
) -> list[Tally]:
    """The count's latest ``limit`` accepted tallies, oldest first; with ``through``, the latest
    up to and including that ``seq`` (the history as it stood at that update)."""
    query = select(tallies).where(tallies.c.count_id == count_id)
    if through is not None:
        query = query.where(tallies.c.seq <= through)
    rows = await conn.execute(query.order_by(tallies.c.seq.desc()).limit(check_limit(limit)))
    return [_tally(row) for row in reversed(rows.all())]


async def reject(
    conn: AsyncConnection, tally: Tally, *, reason: str, detail: str, at: datetime
) -> int:
    """Keep ``tally`` (whole, as JSON) as rejected for ``reason``; returns the new row's id.

    The count does not have to be in the store.
    """
    new_id = await conn.scalar(
        insert(rejected_tallies)
        .values(
            count_id=tally.count_id,
            tally=tally_to_json(tally),
            reason=reason,
            detail=detail,
            at=at,
        )
        .returning(rejected_tallies.c.id)
    )
    assert new_id is not None
    return int(new_id)


async def rejected(conn: AsyncConnection, count_id: str, *, limit: int = 20) -> list[RejectedTally]:
    """The count's latest ``limit`` rejected tallies, newest first."""
    rows = await conn.execute(
        select(rejected_tallies)
        .where(rejected_tallies.c.count_id == count_id)
        .order_by(rejected_tallies.c.id.desc())
        .limit(check_limit(limit))
    )
    return [
        RejectedTally(
            id=row.id,
            count_id=row.count_id,
            tally=tally_from_json(row.tally),
            reason=row.reason,
            detail=row.detail,
            at=row.at,
        )
        for row in rows
    ]
