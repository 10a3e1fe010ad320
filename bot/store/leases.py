"""Leases: what one instance at a time holds (a count's polling, a shard), until it expires.

A lease is taken by its holder or by anyone once it has expired, and renewed by its holder;
one not renewed (its holder died) is free once ``expires_at`` has passed. One statement each
(``INSERT ... ON CONFLICT DO UPDATE ... WHERE``), atomic on PostgreSQL and SQLite alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import ReturningInsert

from bot.store.schema import leases


async def take(
    conn: AsyncConnection, name: str, holder: str, *, now: datetime, until: datetime
) -> bool:
    """Take or renew the lease ``name`` for ``holder`` until ``until``: True when ``holder``
    has it now (it was free, expired at ``now``, or already its own)."""
    values = {"name": name, "holder": holder, "expires_at": until}
    free = or_(leases.c.holder == holder, leases.c.expires_at < now)
    renewed = {"holder": holder, "expires_at": until}
    if conn.dialect.name == "postgresql":
        pg = postgresql.insert(leases).values(**values)
        stmt: ReturningInsert[Any] = pg.on_conflict_do_update(
            index_elements=[leases.c.name], set_=renewed, where=free
        ).returning(leases.c.holder)
    else:
        lite = sqlite.insert(leases).values(**values)
        stmt = lite.on_conflict_do_update(
            index_elements=[leases.c.name], set_=renewed, where=free
        ).returning(leases.c.holder)
    return (await conn.execute(stmt)).first() is not None


async def release(conn: AsyncConnection, name: str, holder: str) -> bool:
    """Give the lease up, if ``holder`` has it (a clean stop hands it on at once)."""
    result = await conn.execute(
        delete(leases).where(leases.c.name == name, leases.c.holder == holder)
    )
    return result.rowcount == 1


async def holders(conn: AsyncConnection, prefix: str = "") -> dict[str, tuple[str, datetime]]:
    """Every lease whose name starts with ``prefix``: its holder and when it expires."""
    rows = await conn.execute(select(leases).where(leases.c.name.startswith(prefix)))
    return {r.name: (r.holder, r.expires_at) for r in rows}
