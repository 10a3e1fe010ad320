"""Leases: what one instance at a time holds (a count's polling, a shard), until it expires.

A lease is taken by its holder or by anyone once it has expired, and renewed by its holder;
one not renewed (its holder died) is free once ``expires_at`` has passed. One statement for any
number of leases (``INSERT ... ON CONFLICT DO UPDATE ... WHERE``), atomic on PostgreSQL and
SQLite alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.dml import ReturningInsert

from bot.store.schema import leases
from bot.store.statements import insert_in


async def take(
    conn: AsyncConnection, name: str, holder: str, *, now: datetime, until: datetime
) -> bool:
    """Take or renew the lease ``name`` for ``holder`` until ``until``: True when ``holder``
    has it now (it was free, expired at ``now``, or already its own)."""
    return name in await take_many(conn, {name: until}, holder, now=now)


async def take_many(
    conn: AsyncConnection, until: Mapping[str, datetime], holder: str, *, now: datetime
) -> set[str]:
    """Take or renew each lease named in ``until`` for ``holder``, each until its time, in one
    statement: the names ``holder`` has now. The rows are locked in name order, so that two
    instances' statements over the same leases never deadlock. The statement is built once and
    sent with every row's values (compiling a thousand rows' worth each time costs more than
    the rest of an instance's polling)."""
    if not until:
        return set()
    rows = [
        {"name": n, "holder": holder, "expires_at": until[n], "now": now} for n in sorted(until)
    ]
    stmt = _TAKE_PG if conn.dialect.name == "postgresql" else _TAKE_SQLITE
    return {row.name for row in await conn.execute(stmt, rows)}


def _take_statement(dialect: str) -> ReturningInsert[Any]:
    """``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` the lease is the holder's or has expired,
    ``RETURNING`` the names taken, in ``dialect``."""
    stmt = insert_in(dialect, leases)
    renewed = {"holder": stmt.excluded.holder, "expires_at": stmt.excluded.expires_at}
    free = or_(leases.c.holder == stmt.excluded.holder, leases.c.expires_at < bindparam("now"))
    taken: ReturningInsert[Any] = stmt.on_conflict_do_update(
        index_elements=[leases.c.name], set_=renewed, where=free
    ).returning(leases.c.name)
    return taken


_TAKE_PG = _take_statement("postgresql")
_TAKE_SQLITE = _take_statement("sqlite")


async def release(conn: AsyncConnection, name: str, holder: str) -> bool:
    """Give the lease up, if ``holder`` has it (a clean stop hands it on at once)."""
    return await release_many(conn, [name], holder) == 1


async def release_many(conn: AsyncConnection, names: Iterable[str], holder: str) -> int:
    """Give up those of the leases ``names`` that ``holder`` has; how many it had."""
    result = await conn.execute(
        delete(leases).where(leases.c.name.in_(sorted(names)), leases.c.holder == holder)
    )
    return result.rowcount


async def holders(conn: AsyncConnection, prefix: str = "") -> dict[str, tuple[str, datetime]]:
    """Every lease whose name starts with ``prefix``: its holder and when it expires."""
    rows = await conn.execute(select(leases).where(leases.c.name.startswith(prefix)))
    return {r.name: (r.holder, r.expires_at) for r in rows}
