"""Fresh stores copied from one migrated store, instead of each migrated through every revision.

Opening a new store migrates it from nothing (a quarter of a second or more, hundreds of times a
run); :meth:`StoreTemplates.seed` is what the suite does instead, before a
:class:`~bot.store.Database` opens a store that does not exist yet (``tests/conftest.py`` wraps
``Database.aopen``):

- SQLite: a file migrated once per test process (the template) is copied to the new path;
- PostgreSQL: the SQL statements that migrating a schema sent (everything but the reads, with
  their parameters), recorded once per test process, are sent again to the new schema, in one
  transaction that takes the migrations' advisory lock.

A template is made for each set of plug-ins' tables a store is opened with (an ``App``'s store
has every installed plug-in's, ``Plugins.tables()``; a bare ``Database`` none), so the store then
opens as a migrated one does, finding the core and each plug-in's branch at their latest
revision, and runs no migration at all (``tests/store/test_templates.py``). What is made is
what migrating makes: the template is migrated by the store's own code in the same run, and the
migration tests (``tests/store/test_migrations.py``, marked ``fresh_store``) still migrate from
nothing, proving that the revisions build the declared schema.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import threading
import uuid
from collections.abc import Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy import event, make_url, text

from bot.store import migrations
from bot.store.engine import enable_wal, is_memory, make_engine, quote_identifier
from bot.store.migrations import Tables

Statement = tuple[str, tuple[Any, ...]]
Plugins = Mapping[str, Tables]


def _apart(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to its end on an event loop of its own (in a thread), whatever loop runs."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


class StoreTemplates:
    """The templates of one test process, made the first time each dialect needs one."""

    def __init__(self, directory: Path) -> None:
        self._dir = directory
        self._lock = threading.Lock()
        self._sqlite: dict[tuple[str, ...], Path] = {}
        self._postgres: dict[tuple[str, tuple[str, ...]], list[Statement]] = {}
        """Both by the names of the plug-ins whose tables the template has."""
        self.enabled = True
        """Off for a test marked ``fresh_store``: its stores migrate from nothing."""

    async def seed(self, url: str, schema: str | None, plugins: Plugins) -> None:
        """Make the store at ``url`` (``schema``) a copy of the template with ``plugins``'
        tables, if it does not exist yet; leave an existing store (or an in-memory one) alone."""
        if not self.enabled:
            return
        u = make_url(url)
        if u.get_backend_name() == "sqlite":
            if u.database and not is_memory(u) and not u.database.startswith("file:"):
                self._seed_sqlite(u.database, plugins)
        elif schema is not None:
            await self._seed_postgres(url, schema, plugins)

    # SQLite: a file to copy.

    def _seed_sqlite(self, database: str, plugins: Plugins) -> None:
        path = Path(database).expanduser()
        if path.exists():
            return
        template = self._sqlite_template(plugins)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.seeding")
        shutil.copyfile(template, partial)
        os.replace(partial, path)  # whole or not at all; no await in between: no race here

    def _sqlite_template(self, plugins: Plugins) -> Path:
        key = tuple(sorted(plugins))
        with self._lock:
            if key not in self._sqlite:
                path = self._dir / f"template-{len(self._sqlite)}.sqlite3"
                _apart(_migrate_sqlite(f"sqlite+aiosqlite:///{path}", plugins))
                conn = sqlite3.connect(path)
                try:  # everything in the one file that is copied
                    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                finally:
                    conn.close()
                self._sqlite[key] = path
            return self._sqlite[key]

    # PostgreSQL: statements to send again.

    async def _seed_postgres(self, url: str, schema: str, plugins: Plugins) -> None:
        statements = self._postgres_template(url, plugins)
        u = make_url(url).set(drivername="postgresql")
        conn = await asyncpg.connect(
            u.render_as_string(hide_password=False),
            server_settings={"search_path": quote_identifier(schema)},
        )
        try:
            async with conn.transaction():
                await conn.execute(  # the migrations' own turn-taking (bot.store.migrations)
                    "SELECT pg_advisory_xact_lock(hashtext('tallybot.migrate:' || $1::text))",
                    schema,
                )
                if await conn.fetchval("SELECT 1 FROM pg_namespace WHERE nspname = $1", schema):
                    return
                await conn.execute("SET LOCAL synchronous_commit = off")  # a test's store
                await conn.execute(f"CREATE SCHEMA {quote_identifier(schema)}")
                for sql, params in statements:
                    await conn.execute(sql, *params)
        finally:
            await conn.close()

    def _postgres_template(self, url: str, plugins: Plugins) -> list[Statement]:
        key = (url, tuple(sorted(plugins)))
        with self._lock:
            if key not in self._postgres:
                self._postgres[key] = _apart(_record_postgres(url, plugins))
            return self._postgres[key]


async def _migrate_sqlite(url: str, plugins: Plugins) -> None:
    """What opening a new SQLite store does (``Database.aopen``), short of seeding it."""
    engine = make_engine(url)
    try:
        await enable_wal(engine)
        await migrations.upgrade(engine, plugins=plugins)
    finally:
        await engine.dispose()


async def _record_postgres(url: str, plugins: Plugins) -> list[Statement]:
    """Migrate a new schema from nothing, recording what changes it; then drop it."""
    name = f"tallybot_template_{uuid.uuid4().hex[:16]}"
    sent: list[tuple[str, Any, bool]] = []
    engine = make_engine(url, schema=name)

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def _sent(_c: Any, _cur: Any, sql: str, params: Any, _ctx: Any, many: bool) -> None:
        sent.append((sql, params, many))

    try:
        await migrations.upgrade(engine, schema=name, plugins=plugins)
        recorded = list(sent)  # not the drop below
        async with engine.begin() as conn:
            await conn.execute(text(f"DROP SCHEMA {quote_identifier(name)} CASCADE"))
    finally:
        await engine.dispose()
    kept: list[Statement] = []
    for sql, params, many in recorded:
        if sql.lstrip().upper().startswith("SELECT"):
            continue  # a read (Alembic looking, the advisory lock): changes nothing
        if sql.strip() == f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(name)}":
            continue
        if many or name in sql or name in repr(params):
            raise RuntimeError(f"cannot replay this migration statement elsewhere: {sql!r}")
        kept.append((sql, tuple(params or ())))
    return _batched(kept)


def _batched(statements: list[Statement]) -> list[Statement]:
    """Consecutive statements without parameters as one (one round trip: a simple query)."""
    out: list[Statement] = []
    run: list[str] = []
    for sql, params in statements:
        if params:
            if run:
                out.append((";\n".join(run), ()))
                run = []
            out.append((sql, params))
        else:
            run.append(sql)
    if run:
        out.append((";\n".join(run), ()))
    return out


__all__ = ["StoreTemplates"]
