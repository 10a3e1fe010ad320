"""Per-count grants: who else may administer a count, inside the tenant that owns it
(``admins add|remove|list``; revision 0006)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import count_admins
from bot.store.statements import insert_for


class GrantKind(StrEnum):
    USER = "user"
    ROLE = "role"


@dataclass(frozen=True, slots=True)
class Grant:
    count_id: str
    kind: GrantKind
    subject: str
    """A user id, or a role id (never a role's name: anyone may name a role anything)."""
    granted_by: str
    granted_at: datetime


async def grant(conn: AsyncConnection, g: Grant) -> bool:
    """Store the grant; False if the count had it already."""
    stmt = (
        insert_for(conn, count_admins)
        .values(
            count_id=g.count_id,
            kind=str(g.kind),
            subject=g.subject,
            granted_by=g.granted_by,
            granted_at=g.granted_at,
        )
        .on_conflict_do_nothing()
    )
    return (await conn.execute(stmt)).rowcount > 0


async def revoke(conn: AsyncConnection, count_id: str, kind: GrantKind, subject: str) -> bool:
    """Take the grant back; False if there was none."""
    c = count_admins.c
    stmt = count_admins.delete().where(
        c.count_id == count_id, c.kind == str(kind), c.subject == subject
    )
    return (await conn.execute(stmt)).rowcount > 0


async def for_count(conn: AsyncConnection, count_id: str) -> list[Grant]:
    """The count's grants, users first."""
    c = count_admins.c
    rows = await conn.execute(
        select(count_admins).where(c.count_id == count_id).order_by(c.kind.desc(), c.subject)
    )
    return [
        Grant(r.count_id, GrantKind(r.kind), r.subject, r.granted_by, r.granted_at) for r in rows
    ]
