"""Tallies: the accepted history of each count, and the tallies that were turned away."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Row, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.model import Tally, TallyState
from bot.errors import StoreError
from bot.store.codec import tally_from_json, tally_to_json, votes_from_json, votes_to_json
from bot.store.schema import counts, rejected_tallies, tallies
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
    """Accept ``tally`` as the count's next one and return it with its ``seq``.

    ``seq`` is 1 for a count's first tally and one more than the last otherwise (the ``seq`` on
    ``tally`` is ignored). Concurrent appends for one count get distinct, gapless numbers: the
    count's row is locked first (PostgreSQL ``FOR UPDATE``; SQLite writers take turns anyway).
    Raises :class:`StoreError` if the count is not in the store.
    """
    locked = await conn.scalar(
        select(counts.c.id).where(counts.c.id == tally.count_id).with_for_update()
    )
    if locked is None:
        raise StoreError(f"cannot add a tally to count {tally.count_id!r}: it is not in the store")
    last_seq = await conn.scalar(
        select(func.coalesce(func.max(tallies.c.seq), 0)).where(
            tallies.c.count_id == tally.count_id
        )
    )
    accepted = tally.with_seq(int(last_seq or 0) + 1)
    await conn.execute(
        insert(tallies).values(
            count_id=accepted.count_id,
            seq=accepted.seq,
            votes=votes_to_json(accepted.votes),
            observed_at=accepted.observed_at,
            source=accepted.source,
            void=accepted.void,
            challenged=accepted.challenged,
            received=accepted.received,
            state=str(accepted.state),
            correction=accepted.correction,
            sustained=accepted.sustained,
            headline=accepted.headline or None,
        )
    )
    return accepted


async def set_headline(conn: AsyncConnection, tally: Tally, headline: str) -> Tally:
    """Keep the headline ``tally`` (accepted, with its seq) was published with; returns it
    with the headline. What was published stays as published: a later edit of the count's
    settings never rewords it."""
    await conn.execute(
        update(tallies)
        .where(tallies.c.count_id == tally.count_id, tallies.c.seq == tally.seq)
        .values(headline=headline)
    )
    return replace(tally, headline=headline)


async def last(conn: AsyncConnection, count_id: str) -> Tally | None:
    """The count's latest accepted tally (highest ``seq``), or ``None``."""
    row = (
        await conn.execute(
            select(tallies)
            .where(tallies.c.count_id == count_id)
            .order_by(tallies.c.seq.desc())
            .limit(1)
        )
    ).first()
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
