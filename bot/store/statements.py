"""Statement helpers shared by the repository modules."""

from __future__ import annotations

from typing import Any

from sqlalchemy import CursorResult, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.errors import StoreError


def insert_for(conn: AsyncConnection, table: Table) -> postgresql.Insert | sqlite.Insert:
    """An INSERT for ``conn``'s dialect, which offers ``on_conflict_do_update/do_nothing``.

    Both dialects spell "insert or update" ``INSERT ... ON CONFLICT``, which is atomic under
    concurrency, unlike a SELECT followed by an INSERT.
    """
    return insert_in(conn.dialect.name, table)


def insert_in(dialect: str, table: Table) -> postgresql.Insert | sqlite.Insert:
    """:func:`insert_for` by the dialect's name: for a statement built once per dialect and
    cached (its values then the execution's parameters), where building it anew each time
    costs more than running it."""
    if dialect == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


def require_changed(result: CursorResult[Any], what: str) -> None:
    """Raise :class:`StoreError` unless the UPDATE or DELETE behind ``result`` touched a row."""
    if result.rowcount == 0:
        raise StoreError(f"{what}: no such row")


def check_limit(limit: int) -> int:
    """Return ``limit`` if it is at least 1, else raise :class:`ValueError`."""
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    return limit
