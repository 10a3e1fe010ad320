"""The audit log: who did what to which count, and whether they were allowed to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import audit_log
from bot.store.statements import check_limit


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audited action. ``old`` and ``new`` are the value before and after, as text.

    ``id`` is ``None`` until the entry is recorded.
    """

    at: datetime
    actor: str
    action: str
    count_id: str | None = None
    old: str | None = None
    new: str | None = None
    allowed: bool = True
    detail: str = ""
    id: int | None = None


def _entry(row: Row[Any]) -> AuditEntry:
    return AuditEntry(
        at=row.at,
        actor=row.actor,
        action=row.action,
        count_id=row.count_id,
        old=row.old,
        new=row.new,
        allowed=row.allowed,
        detail=row.detail,
        id=row.id,
    )


async def record(conn: AsyncConnection, entry: AuditEntry) -> int:
    """Append ``entry`` to the log (its ``id`` is ignored); returns the new entry's id."""
    new_id = await conn.scalar(
        insert(audit_log)
        .values(
            at=entry.at,
            actor=entry.actor,
            action=entry.action,
            count_id=entry.count_id,
            old=entry.old,
            new=entry.new,
            allowed=entry.allowed,
            detail=entry.detail,
        )
        .returning(audit_log.c.id)
    )
    assert new_id is not None
    return int(new_id)


async def recent(
    conn: AsyncConnection, *, limit: int = 50, count_id: str | None = None
) -> list[AuditEntry]:
    """The latest ``limit`` entries (only the count's, if ``count_id`` is given), newest first."""
    stmt = select(audit_log).order_by(audit_log.c.id.desc()).limit(check_limit(limit))
    if count_id is not None:
        stmt = stmt.where(audit_log.c.count_id == count_id)
    return [_entry(row) for row in await conn.execute(stmt)]
