"""The store's lifecycle and its transactions: :class:`Database`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import exc as sa_exc
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.base.lifecycle import Closing
from bot.errors import ConfigError, StoreError
from bot.store import migrations
from bot.store.engine import (
    READ_ONLY,
    backend_of,
    enable_wal,
    is_memory,
    make_engine,
    threads_ended,
)

URGENT_POOL = 3
"""Connections kept apart on PostgreSQL for :meth:`Database.begin_urgent` (the leases' batches
and rounds, the claims' renewal: a few at a time)."""
READERS = 4
"""Connections reading a SQLite file (WAL: side by side, and beside the writer): a command's
reads do not queue behind another's round trips to the driver's thread."""
TURN_TIMEOUT_S = 30.0
"""How long a SQLite transaction waits for its turn before :class:`StoreError`."""
PING_TIMEOUT_S = 10.0
"""How long a listening connection may take to answer :meth:`Listening.ping`."""
CLOSE_WAIT_S = 1.0
"""How long :meth:`Database.aclose` waits for the blocks under way (a write as the bot stops)
to end before it cancels their tasks."""
CANCEL_WAIT_S = 0.5
"""How long :meth:`Database.aclose` then waits for the cancelled blocks to end (rolled back,
their connections back) before it closes the connections all the same; and then, as long again
at most, for a query a cancelled block left running in a SQLite connection's thread to end
(``bot.store.engine.threads_ended``). With
:data:`CLOSE_WAIT_S`, within the closing's share of a stop (``bot.runtime.run.STOP_GRACE``)."""

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Listening:
    """A connection of its own that LISTENs (:meth:`Database.listening`)."""

    lost: asyncio.Future[None]
    """Resolved when the connection ends (the server closed it, the network dropped)."""
    pid: int
    """The server process of the connection (``pg_stat_activity.pid``)."""
    _driver: Any

    async def ping(self) -> None:
        """A round trip, so that a connection dead without a word is found out (StoreError)."""
        with _driver_errors("listening"):
            await self._driver.fetchval("SELECT 1", timeout=PING_TIMEOUT_S)


class Database(Closing):
    """One store: opened with ``async with Database(url) as db:``, closed when the block ends.

    Opening connects, creates the PostgreSQL ``schema`` if it is missing and applies any
    missing migrations; closing disposes of every connection. Errors from the database driver
    (cannot connect, constraint violated, locked, timed out) surface as :class:`StoreError`.

    On SQLite every :meth:`begin` block (and, in memory, every :meth:`connect` block) takes its
    turn on the one writing connection, in arrival order, so concurrent tasks queue instead of
    failing with "database is locked"; a file's :meth:`connect` blocks read on a connection of
    their own, seeing what was committed (WAL), without waiting.
    A task must therefore not open a second block while it is inside one (pass ``conn`` on
    instead); doing so raises :class:`StoreError` at once rather than waiting forever.

    Closing lets the blocks under way end first (a write as the bot stops is committed, its
    connection given back): it waits up to ``close_wait`` seconds for them, then cancels the
    tasks of those still under way and waits up to ``cancel_wait`` more (rolled back); only then
    are the connections closed. A block opened meanwhile raises :class:`StoreError`.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        plugins: Mapping[str, migrations.Tables] | None = None,
        close_wait: float = CLOSE_WAIT_S,
        cancel_wait: float = CANCEL_WAIT_S,
    ) -> None:
        """Check ``url`` and ``schema`` (:class:`~bot.errors.ConfigError`); connects nothing.
        ``plugins``: the plug-ins' own tables, migrated with the core's on opening
        (``Plugins.tables()``; :mod:`bot.store.migrations`). ``close_wait``, ``cancel_wait``:
        how long closing waits for the blocks under way (see above)."""
        self.close_wait = close_wait
        self.cancel_wait = cancel_wait
        self._blocks: Counter[asyncio.Task[Any] | None] = Counter()
        """The tasks inside a block (:meth:`begin`, :meth:`connect`, :meth:`listening`), and
        how many each is inside."""
        self._block_ended = asyncio.Event()
        self._closing = False
        self._url = url
        self._schema = schema
        self._plugins = dict(plugins or {})
        self._dialect = backend_of(url)
        if schema is not None and self._dialect != "postgresql":
            raise ConfigError("a store schema is only supported on PostgreSQL")
        self._engine: AsyncEngine | None = None
        self._reader: AsyncEngine | None = None
        self._urgent: AsyncEngine | None = None
        self._serial = asyncio.Lock() if self._dialect == "sqlite" else None
        self._holder: asyncio.Task[object] | None = None
        self._reading: AsyncEngine | None = None
        """A SQLite file's own connection for reading (WAL: readers never wait for writers)."""

    @property
    def dialect_name(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self._dialect

    @property
    def schema(self) -> str | None:
        """The PostgreSQL schema the tables live in, if one was given."""
        return self._schema

    async def aopen(self) -> None:
        """Connect and migrate; on failure nothing stays open and :class:`StoreError` is raised."""
        if self._engine is not None:
            raise RuntimeError("this Database is already open")
        self._closing = False
        engine = make_engine(self._url, schema=self._schema)
        try:
            with _translated("opening the store", connecting=True):
                if self._dialect == "sqlite" and not is_memory(self._url):
                    await enable_wal(engine)
                await migrations.upgrade(engine, schema=self._schema, plugins=self._plugins)
        except BaseException:
            await engine.dispose()
            raise
        self._engine = engine
        if self._dialect == "sqlite" and not is_memory(self._url):
            self._reading = make_engine(self._url, pool_size=READERS)
        self._reader = (self._reading or engine).execution_options(**_reader_options(self._dialect))
        if self._dialect == "postgresql":
            self._urgent = make_engine(self._url, schema=self._schema, pool_size=URGENT_POOL)

    async def aclose(self) -> None:
        """Let the blocks under way end (see the class docstring), then close every connection.
        Safe to call on a store that failed to open."""
        self._closing = True
        try:
            await self._let_blocks_end()
        finally:
            engine, self._engine, self._reader = self._engine, None, None
            urgent, self._urgent = self._urgent, None
            reading, self._reading = self._reading, None
            engines = [e for e in (engine, reading, urgent) if e is not None]
            for each in engines:
                await each.dispose()
            if not await threads_ended(engines, self.cancel_wait):
                log.warning(
                    "a store connection's query still runs %g s after closing", self.cancel_wait
                )

    async def _let_blocks_end(self) -> None:
        """Wait ``close_wait`` for the blocks under way to end; cancel the tasks of those left,
        and wait ``cancel_wait`` for them to end."""
        if await self._blocks_ended(self.close_wait):
            return
        me = asyncio.current_task()
        left = [task for task in self._blocks if task is not None and task is not me]
        log.warning(
            "%d store blocks still under way %g s after the store began closing: cancelled",
            len(left),
            self.close_wait,
        )
        for task in left:
            task.cancel()
        if not await self._blocks_ended(self.cancel_wait):
            log.warning(
                "store blocks still under way %g s after being cancelled: their connections "
                "are closed under them",
                self.cancel_wait,
            )

    async def _blocks_ended(self, seconds: float) -> bool:
        """Whether every block (but the closing task's own) ended within ``seconds``."""
        me = asyncio.current_task()
        ended = self._block_ended = asyncio.Event()  # of this loop
        try:
            async with asyncio.timeout(seconds):
                while any(task is not me for task in self._blocks):
                    ended.clear()
                    await ended.wait()
        except TimeoutError:
            return False
        return True

    @contextmanager
    def _block(self) -> Iterator[None]:
        """The current task is inside a block until the ``with`` ends (see :meth:`aclose`)."""
        if self._closing:
            raise StoreError("the store is closing")
        task = asyncio.current_task()
        self._blocks[task] += 1
        try:
            yield
        finally:
            self._blocks[task] -= 1
            if not self._blocks[task]:
                del self._blocks[task]
            self._block_ended.set()

    def begin(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection inside a transaction: committed if the block succeeds, else rolled back.

        Exceptions raised by the block propagate unchanged, except driver errors, which become
        :class:`StoreError` (the transaction is rolled back either way).
        """
        return self._session(self._open()[0], "a store transaction", commit=True)

    def begin_urgent(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """As :meth:`begin`, but on PostgreSQL on a few connections kept apart: for the short
        transactions that keep the instances coordinated (leases, claims' renewals), which must
        not wait for a connection behind a burst of other work (an instance's first tallies of
        1,000 counts at start, a fan-out's sends). On SQLite, :meth:`begin` (one instance, one
        connection)."""
        engine = self._urgent or self._open()[0]
        return self._session(engine, "a store transaction", commit=True)

    def connect(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for reading: every statement in the block sees the same snapshot of the
        store (SQLite: one transaction; PostgreSQL: REPEATABLE READ) and nothing is committed."""
        return self._session(self._open()[1], "reading the store", commit=False)

    def _open(self) -> tuple[AsyncEngine, AsyncEngine]:
        if self._engine is None or self._reader is None:
            raise RuntimeError("the Database is not open: use `async with Database(url) as db:`")
        return self._engine, self._reader

    @asynccontextmanager
    async def listening(
        self, channel: str, heard: Callable[[str], None]
    ) -> AsyncIterator[Listening]:
        """PostgreSQL: a connection held for the block, listening on ``channel``;
        ``heard(payload)`` is called with every notice as it arrives. StoreError if it cannot
        connect or listen; once it is listening, a lost connection resolves ``lost``."""
        if self._dialect != "postgresql":
            raise RuntimeError("only a PostgreSQL store can listen")
        with self._block():
            async with self._listening(channel, heard) as listening:
                yield listening

    @asynccontextmanager
    async def _listening(
        self, channel: str, heard: Callable[[str], None]
    ) -> AsyncIterator[Listening]:
        conn = self._open()[0].connect()
        with _translated("listening", connecting=True):
            await conn.start()
            driver: Any = (await conn.get_raw_connection()).driver_connection
        lost = asyncio.get_running_loop().create_future()

        def ended(_connection: object) -> None:
            if not lost.done():
                lost.set_result(None)

        def notified(_connection: object, _pid: int, _channel: str, payload: str) -> None:
            heard(payload)

        try:
            driver.add_termination_listener(ended)
            with _driver_errors("listening"):
                await driver.add_listener(channel, notified)
            yield Listening(lost, int(driver.get_server_pid()), driver)
        finally:
            driver.remove_termination_listener(ended)
            if driver.is_closed():
                await conn.invalidate()
            else:  # back to the pool unlistened (the pool's reset does not UNLISTEN)
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                    await driver.remove_listener(channel, notified)
            with contextlib.suppress(sa_exc.DBAPIError, OSError):
                await conn.close()

    @asynccontextmanager
    async def _session(
        self, engine: AsyncEngine, what: str, *, commit: bool
    ) -> AsyncIterator[AsyncConnection]:
        with self._block():
            async with self._turn(writer=commit):
                conn = engine.connect()
                with _translated(what, connecting=True):
                    await conn.start()
                try:
                    with _translated(what):
                        if commit:
                            async with conn.begin():
                                yield conn
                        else:  # the first statement begins a transaction; close() rolls it back
                            yield conn
                finally:
                    with _translated(what):
                        await conn.close()

    @asynccontextmanager
    async def _turn(self, *, writer: bool) -> AsyncIterator[None]:
        """On SQLite, wait (in arrival order) until no other task is using the store. A SQLite
        file's readers, on their own connection, wait for nobody."""
        if self._serial is None:
            yield
            return
        me = asyncio.current_task()
        if me is not None and me is self._holder:
            raise StoreError(
                "this task is already inside a SQLite store transaction: pass its `conn` on "
                "instead of opening another (it would wait for itself forever)"
            )
        if not writer and self._reading is not None:
            yield
            return
        try:
            async with asyncio.timeout(TURN_TIMEOUT_S):
                await self._serial.acquire()
        except TimeoutError as exc:
            raise StoreError(f"the store was busy for {TURN_TIMEOUT_S:g}s") from exc
        self._holder = me
        try:
            yield
        finally:
            self._holder = None
            self._serial.release()


def _reader_options(dialect: str) -> dict[str, object]:
    options: dict[str, object] = {READ_ONLY: True}
    if dialect == "postgresql":  # a read-only transaction never fails to serialize
        options["isolation_level"] = "REPEATABLE READ"
    return options


@contextmanager
def _driver_errors(what: str) -> Iterator[None]:
    """asyncpg's own errors (raised by its connection used directly) as :class:`StoreError`."""
    try:
        yield
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError) as exc:
        raise StoreError(f"{what} failed: {exc}") from exc


@contextmanager
def _translated(what: str, *, connecting: bool = False) -> Iterator[None]:
    """Turn driver and pool errors into :class:`StoreError`; let everything else through.

    ``connecting``: also translate :class:`OSError`, which asyncpg raises unwrapped when it cannot
    reach the server (an ``OSError`` from the caller's own code in a transaction is left alone).
    """
    try:
        yield
    except sa_exc.DBAPIError as exc:
        raise StoreError(f"{what} failed: {exc.orig}") from exc
    except sa_exc.TimeoutError as exc:
        raise StoreError(f"{what} failed: no database connection was free") from exc
    except OSError as exc:
        if not connecting:
            raise
        raise StoreError(f"{what} failed: cannot reach the database: {exc}") from exc
