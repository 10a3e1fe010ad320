"""The store's schema migrations: Alembic revisions that the store applies itself when it opens.

The revisions live in this package (``versions/``), so an installed tallybot migrates its store
with no ``alembic.ini`` and nothing for the operator to run: :class:`~bot.store.Database`
calls :func:`upgrade` on opening. ``bot.store.schema`` declares the latest layout; a test checks
that the revisions build exactly that (Alembic's ``compare_metadata`` finds no difference), on
SQLite and PostgreSQL.

One upgrade is one transaction, whatever the number of revisions, taken in turns:

- several processes opening one store at once take turns (PostgreSQL: an advisory lock per
  schema; SQLite: ``BEGIN IMMEDIATE``, the database's write lock), and whoever comes second
  finds the work done;
- if a revision fails, everything rolls back and the store stays at the revision it was at;
- on SQLite, foreign keys are switched off around the transaction (a batch revision rebuilds
  a table by copy, drop and rename, which they would refuse) and checked whole before commit.

Stores made before Alembic (a ``schema_version`` table, versions 1 and 2) are converted in the
same transaction: stamped at the matching revision, ``schema_version`` dropped, every row kept.

Adding a revision: change ``bot/store/schema.py``, then ``make migration MSG="what changes"``
writes ``versions/vNNNN_what_changes.py`` from the difference (see ``__main__``); read it, fix
what autogenerate cannot know (renames, data moves), and add an upgrade test that keeps data.

A plug-in owns its tables (issue 29): its :class:`Tables` (``Plugin.tables``) declare them (a
MetaData of its own) and hold their revisions, a branch of their own (the first revision has
``branch_labels=(NAME,)`` and no ``down_revision``), which the upgrade runs after the core's, in
the same transaction. Each branch keeps its version in a table of its own
(``alembic_version_NAME``), so ``alembic_version`` holds the core's one revision and a store
still opens in a tallybot without that plug-in (its tables stay, untouched).

A store already at the latest revisions (nearly every opening) is told so by its version tables
alone, read with plain SQL against the revision numbers in the file names (:func:`head_of`):
Alembic is loaded only when there is something to migrate (importing it and reading the
revisions cost a starting process about 0.2 s of CPU).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, MetaData, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.errors import StoreError
from bot.store.engine import quote_identifier

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

# Converting a store made before Alembic, whose version is in a ``schema_version`` table.
#
# The hand-written runner that came before recorded one row per applied migration there (1:
# create the tables; 2: ``outbox.platform_message_id`` and the delivery-queue index). Revisions
# 0001 and 0002 make exactly the same tables, so such a store is stamped at the matching revision
# and ``schema_version`` is dropped; no table is touched and every row stays. This runs inside
# the upgrade's transaction, under its lock, so a failed upgrade leaves the store unconverted.

LEGACY_TABLE = "schema_version"
REVISION_OF = {1: "0001", 2: "0002"}
"""The Alembic revision each pre-Alembic schema version equals."""


def convert_legacy(conn: Connection, scripts: ScriptDirectory) -> str | None:
    """Stamp a pre-Alembic store at its revision and drop ``schema_version``; return the
    revision stamped, or ``None`` when there was nothing to convert."""
    from alembic.runtime.migration import MigrationContext

    context = MigrationContext.configure(conn)
    legacy = conn.dialect.has_table(conn, LEGACY_TABLE)
    if not legacy or context.get_current_revision() is not None:
        return None
    version = conn.scalar(text(f"SELECT max(version) FROM {LEGACY_TABLE}"))
    revision = REVISION_OF.get(int(version or 0))
    if revision is None:
        raise StoreError(
            f"the store's schema is at version {version}, which this tallybot does not know "
            f"(it knows {', '.join(map(str, REVISION_OF))} before its Alembic revisions); "
            "upgrade tallybot or use another database"
        )
    context.stamp(scripts, revision)
    conn.execute(text(f"DROP TABLE {LEGACY_TABLE}"))
    return revision


log = logging.getLogger(__name__)

SCRIPTS = Path(__file__).resolve().parent
"""Alembic's script directory: ``env.py``, ``script.py.mako`` and ``versions/``."""
FILE_TEMPLATE = "v%%(rev)s_%%(slug)s"
"""Revision files are ``v0003_bigint_figures.py``: importable names, in order."""
FORWARD_ONLY = "tallybot's store only moves forward: restore a backup to go back"
VERSION_TABLE = "alembic_version"
"""Where the core's revision is kept; a plug-in's is in ``alembic_version_NAME``."""


@dataclass(frozen=True, slots=True)
class Tables:
    """A plug-in's own tables: ``metadata`` declares them as its latest revision leaves them
    (the migration tests compare the two), ``versions`` is the folder of its revisions."""

    metadata: MetaData
    versions: Path


def alembic_config(
    connection: Connection | None = None, name: str | None = None, tables: Tables | None = None
) -> Config:
    """Alembic's configuration, made in code (no ``alembic.ini``): the core's, or with
    ``name`` and ``tables`` a plug-in's branch (its folder of revisions, its version table)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.set_main_option("file_template", FILE_TEMPLATE)
    cfg.set_main_option("truncate_slug_length", "40")
    cfg.attributes["connection"] = connection
    if tables is not None:
        cfg.set_main_option("path_separator", "os")  # a path with spaces stays one path
        cfg.set_main_option("version_locations", str(tables.versions))
        cfg.attributes["version_table"] = f"{VERSION_TABLE}_{name}"
        cfg.attributes["metadata"] = tables.metadata
    return cfg


@functools.cache
def scripts(name: str | None = None, tables: Tables | None = None) -> ScriptDirectory:
    """The revisions this tallybot knows: the core's, or a plug-in's."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(None, name, tables))


@functools.cache
def head_of(versions: Path) -> str | None:
    """The latest revision in the folder ``versions`` (``None`` if it holds none), read from the
    file names alone, without loading Alembic: :data:`FILE_TEMPLATE` names each file by its
    revision, and revisions are numbered in order (``python -m bot.store.migrations``)."""
    return max((path.name[1:].split("_", 1)[0] for path in versions.glob("v*_*.py")), default=None)


def latest() -> str:
    """The newest revision: what :func:`upgrade` brings a store to."""
    head = scripts().get_current_head()
    if head is None:
        raise StoreError("no store revisions found in " + str(SCRIPTS / "versions"))
    return head


def known() -> frozenset[str]:
    return frozenset(s.revision for s in scripts().walk_revisions())


async def current_version(conn: AsyncConnection, plugin: str | None = None) -> str | None:
    """The revision the store on ``conn`` is at (the core's, or ``plugin``'s branch's); ``None``
    for an empty (or pre-Alembic) store."""
    from alembic.runtime.migration import MigrationContext

    opts = {"version_table": VERSION_TABLE if plugin is None else f"{VERSION_TABLE}_{plugin}"}
    return await conn.run_sync(
        lambda c: MigrationContext.configure(c, opts=opts).get_current_revision()
    )


async def upgrade(
    engine: AsyncEngine,
    *,
    to: str = "head",
    schema: str | None = None,
    plugins: Mapping[str, Tables] | None = None,
) -> list[str]:
    """Bring the store up to revision ``to`` (default: the latest), then each of ``plugins``'
    branches to its latest (``NAME@REV`` in what is returned); return what was applied.

    ``schema`` (PostgreSQL): the schema the store lives in, created if missing; the engine's
    connections must have it as their ``search_path`` (``make_engine(url, schema=...)``), so
    the tables and Alembic's ``alembic_version`` are made there. Raises :class:`StoreError` if
    the store is at a revision this tallybot does not know (a newer tallybot migrated it).
    """
    sqlite = engine.dialect.name == "sqlite"
    async with engine.connect() as conn:
        if sqlite:  # only outside a transaction does this pragma do anything
            await conn.run_sync(_foreign_keys, False)
        try:
            async with conn.begin():
                await _lock(conn, schema)
                if schema is not None:
                    await conn.execute(
                        text(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
                    )
                applied: list[str] = []
                if to != "head" or not await conn.run_sync(_at_heads, plugins or {}):
                    applied = await conn.run_sync(_upgrade, to)
                    for name, tables in sorted((plugins or {}).items()):
                        applied += await conn.run_sync(_upgrade_plugin, name, tables)
                if sqlite:
                    await conn.run_sync(_check_foreign_keys)
        finally:
            if sqlite:
                await conn.run_sync(_foreign_keys, True)
    return applied


async def _lock(conn: AsyncConnection, schema: str | None) -> None:
    """Make concurrent upgrades of one store (several processes starting) take turns.

    PostgreSQL: a transaction-level advisory lock per schema, under the same key as the
    pre-Alembic runner took, so an old and a new tallybot starting together take turns too.
    SQLite: the transaction began with ``BEGIN IMMEDIATE``, which holds the write lock already.
    """
    if conn.dialect.name == "postgresql":
        await conn.execute(
            text(
                "SELECT pg_advisory_xact_lock(hashtext('tallybot.migrate:' || "
                "coalesce(CAST(:schema AS text), current_schema())))"
            ),
            {"schema": schema},
        )


def _at_heads(conn: Connection, plugins: Mapping[str, Tables]) -> bool:
    """Whether the core and each of ``plugins`` are at their latest revision already (each
    version table holds that one revision and nothing else): nothing to migrate."""
    heads = {VERSION_TABLE: head_of(SCRIPTS / "versions")}
    heads |= {
        f"{VERSION_TABLE}_{name}": head_of(tables.versions) for name, tables in plugins.items()
    }
    for table, head in heads.items():
        if head is None or not conn.dialect.has_table(conn, table):
            return False
        at = conn.scalars(text(f"SELECT version_num FROM {quote_identifier(table)}")).all()
        if at != [head]:
            return False
    return True


def _upgrade(conn: Connection, to: str) -> list[str]:
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.util.exc import CommandError as AlembicCommandError

    converted = convert_legacy(conn, scripts())
    if converted is not None:
        log.info("store from before Alembic converted: stamped at revision %s", converted)
    at = MigrationContext.configure(conn).get_current_heads()
    newer = [rev for rev in at if rev not in known()]
    if newer:
        raise StoreError(
            f"the store is at revision {', '.join(newer)}, newer than this tallybot knows (up "
            f"to {latest()}); upgrade tallybot or use another database"
        )
    applied: list[str] = []

    def noted(*, step: Any, **_: Any) -> None:
        applied.append(str(step.up_revision_id))

    cfg = alembic_config(conn)
    cfg.attributes["on_version_apply"] = noted
    try:
        command.upgrade(cfg, to)
    except AlembicCommandError as exc:
        raise ValueError(f"cannot upgrade the store to {to!r}: {exc}") from exc
    if applied:
        log.info(
            "store migrated from revision %s to %s (applied %s)",
            ", ".join(at) or "none",
            applied[-1],
            ", ".join(applied),
        )
    return applied


def _upgrade_plugin(conn: Connection, name: str, tables: Tables) -> list[str]:
    """Bring ``name``'s branch to its latest revision (after the core's, in its transaction)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.util.exc import CommandError as AlembicCommandError

    mine = scripts(name, tables)
    at = MigrationContext.configure(
        conn, opts={"version_table": f"{VERSION_TABLE}_{name}"}
    ).get_current_heads()
    newer = [rev for rev in at if rev not in {s.revision for s in mine.walk_revisions()}]
    if newer:
        raise StoreError(
            f"the store's {name} tables are at revision {', '.join(newer)}, newer than this "
            f"tallybot's {name} plug-in knows; upgrade it or use another database"
        )
    applied: list[str] = []

    def noted(*, step: Any, **_: Any) -> None:
        applied.append(f"{name}@{step.up_revision_id}")

    cfg = alembic_config(conn, name, tables)
    cfg.attributes["on_version_apply"] = noted
    try:
        command.upgrade(cfg, f"{name}@head")
    except AlembicCommandError as exc:  # its first revision lacks branch_labels=(name,)
        raise StoreError(f"cannot upgrade the {name} plug-in's tables: {exc}") from exc
    if applied:
        log.info("store: the %s plug-in's tables migrated (applied %s)", name, ", ".join(applied))
    return applied


def _foreign_keys(conn: Connection, on: bool) -> None:
    cursor = conn.connection.cursor()
    try:
        cursor.execute(f"PRAGMA foreign_keys = {'ON' if on else 'OFF'}")
    finally:
        cursor.close()


def _check_foreign_keys(conn: Connection) -> None:
    broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    if broken:
        raise StoreError(f"a migration broke foreign keys: {broken[:5]}")
