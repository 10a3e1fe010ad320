"""SQLite's driver with one trip to its thread per statement: :func:`connect`.

aiosqlite runs a SQLite connection on a thread of its own; every call on it is a round trip
from the event loop to that thread and back, and each waits for both to be scheduled. Through
SQLAlchemy's adapter a statement is four (make a cursor, execute, fetch the rows, close the
cursor), ``BEGIN`` three more, and a connection going back to the pool one more for a rollback
even after a commit: about 21 for a ``subscribe``. On a loaded machine those trips, not the
SQL, set the pace of every command and every delivery (``python -m bench.command_rate``).

:class:`Connection` is aiosqlite's with a leaner cursor: a statement is executed, its rows
fetched and its cursor closed in one trip (:class:`Cursor`); ``BEGIN`` (the only statement
that changes nothing by itself) waits to go in the same trip as the statement after it; and
a commit or rollback with no transaction open costs no trip. What the thread last said about
the transaction decides that; after a trip whose answer never came (its caller was cancelled,
or it failed), the state is unknown, and the rollback is made.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import aiosqlite

BEGINS = frozenset({"BEGIN", "BEGIN IMMEDIATE", "BEGIN DEFERRED", "BEGIN EXCLUSIVE"})
"""Statements that only open a transaction: sent with the statement after them."""

Row = Any
T = TypeVar("T")
Description = tuple[tuple[Any, ...], ...] | None


class Connection(aiosqlite.Connection):
    """aiosqlite's connection, with :class:`Cursor` and trips saved (module docstring)."""

    def __init__(self, database: str, **kwargs: Any) -> None:
        super().__init__(lambda: sqlite3.connect(database, **kwargs), 64)
        self._thread.daemon = True  # as SQLAlchemy sets aiosqlite's own
        self.begin_later: str | None = None
        """``BEGIN`` asked for, to be sent with the next statement."""
        self.tx_open: bool | None = False
        """Whether a transaction is open, as the thread last said (None: not known)."""

    def cursor(self) -> Cursor:  # type: ignore[override]
        return Cursor(self)

    async def run(self, sql: str, parameters: Any, many: bool) -> tuple[Any, ...]:
        """One trip: ``BEGIN`` if pending, then the statement, its rows and its cursor's
        figures (description, rowcount, lastrowid)."""
        begin, self.begin_later = self.begin_later, None
        self.tx_open = None  # until the thread says
        conn = self._conn

        def trip() -> tuple[Any, ...]:
            if begin is not None:
                conn.execute(begin)
            cursor = conn.cursor()
            try:
                if many:
                    cursor.executemany(sql, parameters)
                else:
                    cursor.execute(sql, parameters)
                description = cursor.description
                rows = cursor.fetchall() if description else []
                return rows, description, cursor.rowcount, cursor.lastrowid, conn.in_transaction
            finally:
                cursor.close()

        rows, description, rowcount, lastrowid, self.tx_open = await self._in_thread(trip)
        return rows, description, rowcount, lastrowid

    async def commit(self) -> None:
        await self._end(self._conn.commit)

    async def rollback(self) -> None:
        await self._end(self._conn.rollback)

    async def _end(self, how: Callable[[], None]) -> None:
        self.begin_later = None  # a BEGIN never sent needs no end
        if self.tx_open is False:
            return
        self.tx_open = None
        await self._in_thread(how)
        self.tx_open = False

    def _in_thread(self, fn: Callable[[], T]) -> Awaitable[T]:
        """One trip: ``fn`` called on the connection's thread (aiosqlite's queue)."""
        execute: Callable[[Callable[[], T]], Awaitable[T]] = self._execute
        return execute(fn)


class Cursor:
    """A cursor whose statement is one trip (:meth:`Connection.run`); its rows are kept here
    (a SQLAlchemy server-side cursor reads them from here too)."""

    arraysize = 1

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._rows: deque[Row] = deque()
        self.description: Description = None
        self.rowcount = -1
        self.lastrowid: int | None = None

    async def __aenter__(self) -> Cursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> Cursor:
        if sql.strip().upper() in BEGINS:
            self._conn.begin_later = sql
            self._finished([], None, -1, None)
            return self
        self._finished(*await self._conn.run(sql, [] if parameters is None else parameters, False))
        return self

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> Cursor:
        self._finished(*await self._conn.run(sql, parameters, True))
        return self

    def _finished(
        self, rows: list[Row], description: Description, rowcount: int, lastrowid: int | None
    ) -> None:
        self._rows = deque(rows)
        self.description, self.rowcount, self.lastrowid = description, rowcount, lastrowid

    async def fetchone(self) -> Row | None:
        return self._rows.popleft() if self._rows else None

    async def fetchmany(self, size: int | None = None) -> Sequence[Row]:
        n = min(len(self._rows), self.arraysize if size is None else size)
        return [self._rows.popleft() for _ in range(n)]

    async def fetchall(self) -> Sequence[Row]:
        rows, self._rows = list(self._rows), deque()
        return rows

    async def close(self) -> None:
        self._rows.clear()


def connect(database: str, **kwargs: Any) -> Connection:
    """For SQLAlchemy's aiosqlite dialect (``async_creator_fn``): the connection to
    ``database``, opened when awaited."""
    return Connection(database, **kwargs)
