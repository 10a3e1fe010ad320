"""The store's Alembic revisions on SQLite (a real file) and PostgreSQL (a fresh schema per test):
they build exactly the declared schema, convert pre-Alembic stores without losing a row, refuse
a store from a newer tallybot, and take turns when several processes open one store at once."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.errors import StoreError
from bot.platform import Plugins
from bot.store import Database, migrations
from bot.store.engine import WAL_RETRY_S, enable_wal, ensure_schema, make_engine
from bot.store.migrations import VERSION_TABLE, Tables
from bot.store.schema import metadata
from tests.store.legacy import create_legacy_store
from tests.store.rows import check_v1_rows, insert_v1_rows

pytestmark = pytest.mark.fresh_store  # what migrating from nothing makes: no template copy


def differences(conn: Connection, plugins: Mapping[str, Tables] | None = None) -> list[Any]:
    """What Alembic's autogenerate would change to make the store match ``bot.store.schema``
    and the tables of ``plugins`` (their version tables aside)."""

    def ours(name: str | None, kind: str, _parent: Any) -> bool:
        return not (kind == "table" and name and name.startswith(f"{VERSION_TABLE}_"))

    opts = {"compare_type": True, "include_name": ours}
    context = MigrationContext.configure(conn, opts=opts)
    every = [metadata, *(t.metadata for t in (plugins or {}).values())]
    return list(compare_metadata(context, every))  # type: ignore[arg-type]  # a list is taken


def installed() -> dict[str, Tables]:
    """Every installed plug-in's own tables (Slack's installations today)."""
    return Plugins.installed().tables()


def layout(conn: Connection) -> dict[str, Any]:
    """Every table's columns (name, type, nullable), primary key, indexes, unique constraints
    and foreign keys, with their names, as the database reports them."""
    insp = inspect(conn)
    return {
        table: {
            "columns": [
                (c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns(table)
            ],
            "pk": insp.get_pk_constraint(table),
            "indexes": sorted(
                (str(i["name"]), tuple(i["column_names"]), bool(i["unique"]))
                for i in insp.get_indexes(table)
                if not i.get("duplicates_constraint")
            ),
            "uniques": sorted(
                (str(u["name"]), tuple(u["column_names"]))
                for u in insp.get_unique_constraints(table)
            ),
            "fks": sorted(
                (str(f["name"]), tuple(f["constrained_columns"]), f["referred_table"])
                for f in insp.get_foreign_keys(table)
            ),
        }
        for table in sorted(insp.get_table_names())
    }


class Store:
    """An engine on the test's store, for building it by hand before ``Database`` opens it."""

    def __init__(self, url: str, schema: str | None) -> None:
        self.url, self.schema = url, schema
        self.engine: AsyncEngine = make_engine(url, schema=schema)

    async def __aenter__(self) -> AsyncEngine:
        if self.schema is not None:
            await ensure_schema(self.engine, self.schema)
        return self.engine

    async def __aexit__(self, *exc: object) -> None:
        await self.engine.dispose()


async def test_the_revisions_build_exactly_the_declared_schema(db: Database) -> None:
    async with db.connect() as conn:
        assert await migrations.current_version(conn) == migrations.latest()
        assert await conn.run_sync(differences) == []


def test_the_latest_revision_read_from_the_file_names_is_alembics_head() -> None:
    """An opening store at these revisions skips Alembic (``migrations.head_of``): they must be
    the heads Alembic finds, for the core and each installed plug-in's branch."""
    assert migrations.head_of(migrations.SCRIPTS / "versions") == migrations.latest()
    for name, tables in installed().items():
        head = migrations.scripts(name, tables).get_current_head()
        assert migrations.head_of(tables.versions) == head


async def test_the_core_and_every_plugins_branch_build_exactly_their_declared_tables(
    store_url: str, store_schema: str | None
) -> None:
    """The core's revisions and each installed plug-in's branch, run on opening, build the
    core's schema and each plug-in's MetaData, nothing more or less (issue 29)."""
    plugins = installed()
    assert "slack" in plugins
    db = Database(store_url, schema=store_schema, plugins=plugins)
    async with db, db.connect() as conn:
        assert await migrations.current_version(conn) == migrations.latest()
        for name, tables in plugins.items():
            head = migrations.scripts(name, tables).get_current_head()
            assert await migrations.current_version(conn, name) == head
        assert await conn.run_sync(differences, plugins) == []
        assert await conn.run_sync(differences) != []  # the plug-ins' tables are seen


async def test_the_comparison_sees_a_difference(db: Database) -> None:
    """The check above can fail: a store missing an index is reported."""
    async with db.begin() as conn:
        await conn.execute(text("DROP INDEX ix_subscriptions_count_id"))
        diff = await conn.run_sync(differences)
    assert [d[0] for d in diff] == ["add_index"]


async def test_revisions_1_and_2_make_exactly_what_the_old_runner_made(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await create_legacy_store(engine, to=2)
        async with engine.begin() as conn:
            await conn.execute(text("DROP TABLE schema_version"))
            old = await conn.run_sync(layout)
            old_sql = await sqlite_ddl(conn)
        async with engine.begin() as conn:  # start again, with Alembic this time
            for table in reversed(list(old)):
                await conn.execute(text(f"DROP TABLE {table}"))
        assert await migrations.upgrade(engine, to="0002", schema=store_schema) == [
            "0001",
            "0002",
        ]
        async with engine.connect() as conn:
            new = await conn.run_sync(layout)
            new_sql = await sqlite_ddl(conn)
    assert new.pop("alembic_version")
    assert new == old
    assert new_sql == old_sql  # on SQLite, the very same CREATE statements


async def sqlite_ddl(conn: AsyncConnection) -> list[str] | None:
    if conn.dialect.name != "sqlite":
        return None
    rows = await conn.execute(
        text("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name != 'alembic_version'")
    )
    return sorted(str(r[0]) for r in rows)


@pytest.mark.parametrize("legacy_version", [1, 2])
async def test_a_store_from_before_alembic_is_converted_keeping_every_row(
    store_url: str,
    store_schema: str | None,
    legacy_version: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Store(store_url, store_schema) as engine:
        await create_legacy_store(engine, to=legacy_version)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)
    with caplog.at_level(logging.INFO, logger="bot.store.migrations"):
        async with Database(store_url, schema=store_schema):
            pass
    stamped = f"000{legacy_version}"
    after = [s.revision for s in reversed(list(migrations.scripts().walk_revisions()))]
    after = after[after.index(stamped) + 1 :]
    assert [r.getMessage() for r in caplog.records if r.name == "bot.store.migrations"] == [
        f"store from before Alembic converted: stamped at revision {stamped}",
        f"store migrated from revision {stamped} to {after[-1]} (applied {', '.join(after)})",
    ]
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await migrations.current_version(conn) == migrations.latest()
            assert await conn.run_sync(differences) == []
            assert "schema_version" not in await conn.run_sync(
                lambda c: inspect(c).get_table_names()
            )
        await check_v1_rows(db)
    async with Database(store_url, schema=store_schema) as db, db.connect() as conn:
        assert await migrations.current_version(conn) == migrations.latest()  # opens as usual


async def test_a_store_from_a_newer_tallybot_is_refused(
    store_url: str, store_schema: str | None
) -> None:
    async with Database(store_url, schema=store_schema) as db, db.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    with pytest.raises(StoreError, match="revision 0999, newer than this tallybot knows"):
        async with Database(store_url, schema=store_schema):
            pass


async def test_a_pre_alembic_store_of_an_unknown_version_is_refused(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await create_legacy_store(engine, to=2)
        async with engine.begin() as conn:
            await conn.execute(text("UPDATE schema_version SET version = 99 WHERE version = 2"))
    with pytest.raises(StoreError, match="version 99, which this tallybot does not know"):
        async with Database(store_url, schema=store_schema):
            pass
    async with Store(store_url, store_schema) as engine, engine.connect() as conn:
        assert await migrations.current_version(conn) is None  # nothing was stamped
        assert await conn.scalar(text("SELECT max(version) FROM schema_version")) == 99


@pytest.mark.parametrize("legacy", [False, True])
async def test_processes_opening_one_store_at_once_take_turns(
    store_url: str, store_schema: str | None, legacy: bool
) -> None:
    """Like five processes starting together: each its own engine (its own connections). One
    migrates (or converts), the others wait for it and find the work done."""
    if legacy:
        async with Store(store_url, store_schema) as engine:
            await create_legacy_store(engine, to=1)
            async with engine.begin() as conn:
                await insert_v1_rows(conn)
    engines = [make_engine(store_url, schema=store_schema) for _ in range(5)]
    try:
        applied = await asyncio.gather(
            *(migrations.upgrade(e, schema=store_schema) for e in engines)
        )
    finally:
        for e in engines:
            await e.dispose()
    everything = [s.revision for s in reversed(list(migrations.scripts().walk_revisions()))]
    expected = everything[1:] if legacy else everything
    assert sorted(applied, key=len) == [[], [], [], [], expected]
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
        if legacy:
            await check_v1_rows(db)


@pytest.mark.parametrize("legacy", [False, True])
async def test_stores_opening_at_once_all_open(
    store_url: str, store_schema: str | None, legacy: bool
) -> None:
    """The same through ``Database``, which on SQLite also switches the file to WAL first."""
    if legacy:
        async with Store(store_url, store_schema) as engine:
            await create_legacy_store(engine, to=2)
            async with engine.begin() as conn:
                await insert_v1_rows(conn)
    async with contextlib.AsyncExitStack() as stack:
        dbs = await asyncio.gather(
            *(stack.enter_async_context(Database(store_url, schema=store_schema)) for _ in range(5))
        )
        for db in dbs:
            async with db.connect() as conn:
                assert await migrations.current_version(conn) == migrations.latest()
                if db.dialect_name == "sqlite":
                    assert await conn.scalar(text("PRAGMA journal_mode")) == "wal"
        if legacy:
            await check_v1_rows(dbs[0])


async def test_an_unknown_target_revision_is_a_value_error(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{tmp_path / 'x.sqlite3'}")
    try:
        with pytest.raises(ValueError, match="cannot upgrade the store to 'nope'"):
            await migrations.upgrade(engine, to="nope")
    finally:
        await engine.dispose()


async def test_switching_to_wal_waits_for_a_writer_of_another_process(tmp_path: Path) -> None:
    """SQLite refuses the switch at once (no busy wait) while another connection holds the
    write lock, as a second process migrating the same new store does: it is tried again."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'new.sqlite3'}"
    one, two = make_engine(url), make_engine(url)
    holding, release = asyncio.Event(), asyncio.Event()
    naps: list[float] = []

    async def hold_the_write_lock() -> None:
        async with one.begin() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            holding.set()
            await release.wait()

    async def nap(seconds: float) -> None:
        naps.append(seconds)
        release.set()
        await asyncio.sleep(0)

    try:
        holder = asyncio.create_task(hold_the_write_lock())
        await holding.wait()
        await enable_wal(two, sleep=nap)
        await holder
        async with two.connect() as conn:
            assert await conn.scalar(text("PRAGMA journal_mode")) == "wal"
    finally:
        await one.dispose()
        await two.dispose()
    assert naps
    assert naps[0] == WAL_RETRY_S
