"""How the store connects to each database: one engine per URL, set up for its dialect."""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite
from sqlalchemy import URL, Connection, event, make_url, text
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool

from bot.errors import ConfigError

BUSY_TIMEOUT_MS = 10_000
"""How long SQLite waits for another process's write lock before giving up."""
WAL_RETRY_S = 0.02
"""How soon :func:`enable_wal` tries again when another connection holds the write lock."""
CONNECT_TIMEOUT_S = 10.0
"""How long PostgreSQL connection attempts may take."""
READ_ONLY = "tallybot_read_only"
"""Execution option marking an engine or connection that only reads (SQLite: plain ``BEGIN``)."""

DIALECTS = ("sqlite", "postgresql")
DRIVERS = {"sqlite": "aiosqlite", "postgresql": "asyncpg"}
"""The asyncio driver the store uses for each dialect."""
EXAMPLES = "sqlite+aiosqlite:///path/to/file.sqlite3 or postgresql+asyncpg://user@host:5432/db"


def url_problem(url: str) -> str | None:
    """What is wrong with ``url`` as a store URL (None: nothing), without connecting."""
    try:
        u = make_url(url)
    except (ArgumentError, ValueError):
        return f"{url!r} is not a database URL: use {EXAMPLES}"
    backend = u.get_backend_name()
    if backend not in DIALECTS:
        return f"unsupported database {backend!r}: use {EXAMPLES}"
    driver = DRIVERS[backend]
    if u.get_driver_name() != driver:
        fixed = u.set(drivername=f"{backend}+{driver}").render_as_string(hide_password=True)
        return (
            f"the {u.get_driver_name()!r} driver does not work here (tallybot is async): "
            f"write {fixed!r}"
        )
    if "\0" in url:
        return "the URL contains a NUL character"
    return None


def backend_of(url: str | URL) -> str:
    """The dialect name of ``url`` (``sqlite`` or ``postgresql``), or :class:`ConfigError`."""
    problem = url_problem(url if isinstance(url, str) else url.render_as_string(False))
    if problem is not None:
        raise ConfigError(f"store URL: {problem}")
    return make_url(url).get_backend_name()


def is_memory(url: str | URL) -> bool:
    """Whether ``url`` names a private in-memory SQLite database."""
    u = make_url(url)
    return u.get_backend_name() == "sqlite" and u.database in (None, "", ":memory:")


def make_engine(
    url: str | URL, *, schema: str | None = None, pool_size: int | None = None
) -> AsyncEngine:
    """An engine for ``url``, set up as the store needs it.

    SQLite file: the parent directory is created; foreign keys and a busy timeout are enabled
    on every connection (WAL once per file: :func:`enable_wal`); the pool holds one connection
    (``pool_size``: that many, for readers); SQLAlchemy (not the driver) emits
    ``BEGIN``: ``BEGIN IMMEDIATE`` for transactions that may write, so that writers from other
    processes queue on the busy timeout instead of failing with "database is locked".
    SQLite ``:memory:``: one shared connection (``StaticPool``), so every connection sees the same
    database. PostgreSQL: with ``schema``, every connection's ``search_path`` is that schema only,
    so all tables live there (see :func:`ensure_schema`); ``pool_size``: at most that many
    connections (default: SQLAlchemy's pool, 5 and 10 more when busy).
    """
    u = make_url(url)
    backend = backend_of(u)
    if schema is not None and backend != "postgresql":
        raise ConfigError("a store schema is only supported on PostgreSQL")
    if backend == "sqlite":
        return _sqlite_engine(u, pool_size or 1)
    return _postgres_engine(u, schema, pool_size)


def _sqlite_engine(url: URL, pool_size: int) -> AsyncEngine:
    memory = is_memory(url)
    if memory:
        engine = create_async_engine(url, poolclass=StaticPool)
    else:
        assert url.database is not None
        if not url.database.startswith("file:"):
            Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, pool_size=pool_size, max_overflow=0)

    made = _SQLITE_CONNECTIONS[engine.sync_engine] = weakref.WeakSet()

    @event.listens_for(engine.sync_engine, "do_connect")
    def _stopped_once(_dialect: Any, _record: Any, _cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["async_creator_fn"] = partial(_connect_stopped_once, made=made)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Stop the driver from issuing BEGIN itself (it skips it before SELECT and DDL);
        # _on_begin below issues it instead.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        read_only = conn.get_execution_options().get(READ_ONLY, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


class StoppedOnce(aiosqlite.Connection):
    """aiosqlite's connection, whose worker thread is stopped once however often it is told to.

    SQLAlchemy stops a connection (``stop()``) when it terminates it, and aiosqlite's ``close()``
    stops it again: a task cancelled while its connection closes (a stop's second cancellation,
    :meth:`bot.store.Database.aclose` cancelling a block) has both happen, and the second stop,
    queued behind the one that ended the thread, was never answered, so the close waited for
    ever (and the loop's shutdown with it). Here the second stop is answered with the first's.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection], iter_chunk_size: int) -> None:
        super().__init__(connector, iter_chunk_size)
        self._thread.daemon = True  # as SQLAlchemy's own connect: it never holds up the exit
        self._stopping: list[asyncio.Future[Any] | None] = []

    def stop(self) -> asyncio.Future[Any] | None:
        if not self._stopping:
            self._stopping.append(super().stop())
        return self._stopping[0]

    def ended(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (blocking) for the worker thread to end: whether it has."""
        self._thread.join(seconds)
        return not self._thread.is_alive()


_SQLITE_CONNECTIONS: weakref.WeakKeyDictionary[Any, weakref.WeakSet[StoppedOnce]] = (
    weakref.WeakKeyDictionary()
)
"""The SQLite connections each engine made, by its (sync) engine."""


def _connect_stopped_once(
    database: str, *, made: weakref.WeakSet[StoppedOnce], iter_chunk_size: int = 64, **kwargs: Any
) -> StoppedOnce:
    """``aiosqlite.connect``, with a :class:`StoppedOnce` (the store's every SQLite connection,
    through the engine's ``do_connect`` event), noted among the engine's ``made``."""
    connection = StoppedOnce(partial(sqlite3.connect, database, **kwargs), iter_chunk_size)
    made.add(connection)
    return connection


async def threads_ended(engines: Iterable[AsyncEngine], seconds: float) -> bool:
    """After ``dispose()``: wait up to ``seconds`` in all for the worker threads of the SQLite
    connections ``engines`` made to end; whether they all have (always, on PostgreSQL).

    A query that was running in a connection's thread when its block was cancelled (a stop)
    goes on to its end, then the thread takes the stop queued behind it, and answers both to
    the event loop: were the loop closed by then (the bot's exit, a test's end), the thread
    would fail on it. The store's close returns once nothing is left to answer."""
    threads = [c for e in engines for c in _SQLITE_CONNECTIONS.get(e.sync_engine, ())]
    if not threads:
        return True

    def join() -> bool:
        deadline = time.monotonic() + seconds
        return all(c.ended(max(0.0, deadline - time.monotonic())) for c in threads)

    return await asyncio.to_thread(join)


async def enable_wal(
    engine: AsyncEngine, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
) -> None:
    """Put a SQLite file store in WAL mode (kept in the file: every connection then uses it).

    The switch needs a moment when no other connection writes. If another process holds the
    write lock (starting at the same time, migrating), SQLite refuses at once rather than wait
    (waiting could deadlock), so this tries again until :data:`BUSY_TIMEOUT_MS` has passed.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + BUSY_TIMEOUT_MS / 1000
    async with engine.connect() as conn:
        while True:
            try:
                if await conn.run_sync(_set_wal) == "wal":
                    return
            except engine.dialect.loaded_dbapi.OperationalError as exc:
                if "locked" not in str(exc) or loop.time() > deadline:
                    raise
            await sleep(WAL_RETRY_S)


def _set_wal(conn: Connection) -> str:
    # On the driver's connection: through SQLAlchemy it would begin a transaction first, and
    # the journal mode cannot change inside one.
    cursor = conn.connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode = WAL")
        row = cursor.fetchone()
    finally:
        cursor.close()
    return str(row[0]).lower() if row else ""


def _postgres_engine(url: URL, schema: str | None, pool_size: int | None) -> AsyncEngine:
    connect_args: dict[str, Any] = {"timeout": CONNECT_TIMEOUT_S}
    if schema is not None:
        connect_args["server_settings"] = {"search_path": quote_identifier(schema)}
    sized: dict[str, Any] = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": 0}
    return create_async_engine(url, pool_pre_ping=True, connect_args=connect_args, **sized)


async def ensure_schema(engine: AsyncEngine, schema: str) -> None:
    """Create the PostgreSQL schema ``schema`` unless it exists."""
    async with engine.begin() as conn:
        await conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}"))


def quote_identifier(name: str) -> str:
    """``name`` as a quoted SQL identifier, e.g. ``t_1`` -> ``"t_1"`` (safe for any text)."""
    return '"' + name.replace('"', '""') + '"'
