"""Counts: the contests being counted, with their choices and decision rule."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.model import Count, CountStatus, DecisionRule, RuleKind
from bot.store.codec import (
    choices_from_json,
    choices_to_json,
    threshold_from_text,
    threshold_to_text,
)
from bot.store.schema import counts
from bot.store.statements import insert_for, require_changed


def _values(count: Count) -> dict[str, Any]:
    return {
        "id": count.id,
        "title": count.title,
        "choices": choices_to_json(count.choices),
        "rule_kind": str(count.rule.kind),
        "tie_holder": count.rule.tie_holder,
        "threshold": threshold_to_text(count.rule.threshold),
        "eligible": count.eligible,
        "received": count.received,
        "status": str(count.status),
    }


def _count(row: Row[Any]) -> Count:
    return Count(
        id=row.id,
        title=row.title,
        choices=choices_from_json(row.choices),
        rule=DecisionRule(
            RuleKind(row.rule_kind), row.tie_holder, threshold_from_text(row.threshold)
        ),
        eligible=row.eligible,
        received=row.received,
        status=CountStatus(row.status),
    )


async def upsert(conn: AsyncConnection, count: Count) -> None:
    """Store ``count``: insert it, or overwrite every field of the stored count with that id."""
    values = _values(count)
    stmt = insert_for(conn, counts).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[counts.c.id],
        set_={name: stmt.excluded[name] for name in values if name != "id"},
    )
    await conn.execute(stmt)


async def get(conn: AsyncConnection, count_id: str) -> Count | None:
    """The count with id ``count_id``, or ``None``."""
    row = (await conn.execute(select(counts).where(counts.c.id == count_id))).first()
    return None if row is None else _count(row)


async def all_counts(conn: AsyncConnection) -> list[Count]:
    """Every stored count, by id."""
    rows = await conn.execute(select(counts).order_by(counts.c.id))
    return [_count(row) for row in rows]


async def set_status(conn: AsyncConnection, count_id: str, status: CountStatus) -> None:
    """Set the count's status; :class:`StoreError` if there is no such count."""
    result = await conn.execute(
        update(counts).where(counts.c.id == count_id).values(status=str(status))
    )
    require_changed(result, f"count {count_id!r}")


async def set_received(conn: AsyncConnection, count_id: str, received: int | None) -> None:
    """Set the number of ballots received; :class:`StoreError` if there is no such count."""
    if received is not None and received < 0:
        raise ValueError(f"received cannot be negative, got {received}")
    result = await conn.execute(
        update(counts).where(counts.c.id == count_id).values(received=received)
    )
    require_changed(result, f"count {count_id!r}")
