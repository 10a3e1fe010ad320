"""A small versioned migration runner (no Alembic).

Each migration is an async function that takes an :class:`AsyncConnection` and changes the schema
from version ``n - 1`` to ``n``. :func:`upgrade` applies the missing ones in order, one
transaction each, and records each in ``schema_version``; if a migration fails, its transaction
rolls back and the database stays at the previous version.

Migrations are frozen history: once released, a migration is never edited. Migration 1 therefore
carries its own copy of the tables as they were, not :mod:`bot.store.schema` (which is the
latest layout).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import (
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    insert,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.errors import StoreError
from bot.store.schema import NAMING, schema_version
from bot.store.types import Id, UTCDateTime

Apply = Callable[[AsyncConnection], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    apply: Apply


def _tables_v1() -> MetaData:
    """The tables as migration 1 created them (frozen: do not edit)."""
    md = MetaData(naming_convention=NAMING)
    Table(
        "counts",
        md,
        Column("id", String(64), primary_key=True),
        Column("title", Text, nullable=False),
        Column("choices", Text, nullable=False),
        Column("rule_kind", String(32), nullable=False),
        Column("tie_holder", String(32), nullable=True),
        Column("threshold", String(32), nullable=True),
        Column("eligible", Integer, nullable=True),
        Column("received", Integer, nullable=True),
        Column("status", String(32), nullable=False),
    )
    Table(
        "tallies",
        md,
        Column("id", Id, primary_key=True, autoincrement=True),
        Column("count_id", String(64), ForeignKey("counts.id"), nullable=False),
        Column("seq", Integer, nullable=False),
        Column("votes", Text, nullable=False),
        Column("observed_at", UTCDateTime, nullable=False),
        Column("source", Text, nullable=False),
        Column("void", Integer, nullable=False),
        Column("challenged", Integer, nullable=False),
        Column("received", Integer, nullable=True),
        Column("state", String(32), nullable=False),
        Column("correction", Boolean, nullable=False),
        UniqueConstraint("count_id", "seq"),
    )
    Table(
        "rejected_tallies",
        md,
        Column("id", Id, primary_key=True, autoincrement=True),
        Column("count_id", String(64), nullable=False),
        Column("tally", Text, nullable=False),
        Column("reason", String(64), nullable=False),
        Column("detail", Text, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Index(None, "count_id", "id"),
    )
    Table(
        "subscriptions",
        md,
        Column("id", Id, primary_key=True, autoincrement=True),
        Column("platform", String(32), nullable=False),
        Column("workspace", String(128), nullable=False),
        Column("channel", String(128), nullable=False),
        Column("count_id", String(64), ForeignKey("counts.id"), nullable=False),
        Column("mode", String(32), nullable=False),
        Column("enabled", Boolean, nullable=False),
        Column("disabled_reason", Text, nullable=True),
        Column("created_by", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("live_message_id", Text, nullable=True),
        UniqueConstraint("platform", "workspace", "channel", "count_id"),
        Index(None, "count_id"),
    )
    Table(
        "audit_log",
        md,
        Column("id", Id, primary_key=True, autoincrement=True),
        Column("at", UTCDateTime, nullable=False),
        Column("actor", Text, nullable=False),
        Column("action", String(64), nullable=False),
        Column("count_id", String(64), nullable=True),
        Column("old", Text, nullable=True),
        Column("new", Text, nullable=True),
        Column("allowed", Boolean, nullable=False),
        Column("detail", Text, nullable=False),
        Index(None, "count_id", "id"),
    )
    Table(
        "outbox",
        md,
        Column("id", Id, primary_key=True, autoincrement=True),
        Column("subscription_id", Id, nullable=True),
        Column("platform", String(32), nullable=False),
        Column("workspace", String(128), nullable=False),
        Column("channel", String(128), nullable=False),
        Column("count_id", String(64), nullable=False),
        Column("tally_seq", Integer, nullable=True),
        Column("action", String(32), nullable=False),
        Column("significant", Boolean, nullable=False),
        Column("payload", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("status", String(32), nullable=False),
        Column("attempts", Integer, nullable=False),
        Column("next_attempt_at", UTCDateTime, nullable=False),
        Column("sending_at", UTCDateTime, nullable=True),
        Column("sent_at", UTCDateTime, nullable=True),
        Column("last_error", Text, nullable=True),
        Index(None, "subscription_id", "status"),
    )
    return md


async def _create_tables(conn: AsyncConnection) -> None:
    # No checkfirst: at version 0 none of these exist (and checking costs a query per table).
    await conn.run_sync(lambda c: _tables_v1().create_all(c, checkfirst=False))


async def _outbox_message_id_and_queue_index(conn: AsyncConnection) -> None:
    await conn.execute(text("ALTER TABLE outbox ADD COLUMN platform_message_id TEXT"))
    await conn.execute(
        text("CREATE INDEX ix_outbox_platform_status_id ON outbox (platform, status, id)")
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "create tables", _create_tables),
    Migration(
        2,
        "outbox.platform_message_id and the delivery-queue index",
        _outbox_message_id_and_queue_index,
    ),
)
LATEST = MIGRATIONS[-1].version


async def current_version(conn: AsyncConnection) -> int:
    """The schema version of the database ``conn`` is on; 0 for an empty database."""
    exists = await conn.run_sync(lambda c: c.dialect.has_table(c, schema_version.name))
    if not exists:
        return 0
    version = await conn.scalar(select(func.max(schema_version.c.version)))
    return int(version or 0)


async def _lock(conn: AsyncConnection) -> None:
    """Make concurrent upgrades of one database (several processes starting) take turns.

    PostgreSQL: a transaction-level advisory lock per schema. SQLite: the store begins every
    write transaction with ``BEGIN IMMEDIATE``, which already takes the database's write lock.
    """
    if conn.dialect.name == "postgresql":
        await conn.execute(
            text("SELECT pg_advisory_xact_lock(hashtext('tallybot.migrate:' || current_schema()))")
        )


async def upgrade(engine: AsyncEngine, *, to: int | None = None) -> list[int]:
    """Bring the database up to version ``to`` (default: the latest) and return what was applied.

    Each migration runs in its own transaction together with its ``schema_version`` row, so the
    database is always at a whole version. Raises :class:`StoreError` if the database is at a
    newer version than this code knows (it was opened by a newer tallybot).
    """
    target = LATEST if to is None else to
    if not 0 <= target <= LATEST:
        raise ValueError(f"no schema version {target}; versions are 0..{LATEST}")
    applied: list[int] = []
    for migration in MIGRATIONS:
        if migration.version > target:
            break
        async with engine.begin() as conn:
            await _lock(conn)
            version = await current_version(conn)
            if version > LATEST:
                raise StoreError(
                    f"the store's schema is at version {version}, newer than this tallybot "
                    f"knows (up to {LATEST}); upgrade tallybot or use another database"
                )
            if version >= migration.version:
                continue
            if version != migration.version - 1:
                raise StoreError(f"schema version {version} skips migrations before {migration}")
            if version == 0:
                await conn.run_sync(lambda c: schema_version.create(c, checkfirst=True))
            await migration.apply(conn)
            await conn.execute(
                insert(schema_version).values(
                    version=migration.version, name=migration.name, applied_at=datetime.now(UTC)
                )
            )
            applied.append(migration.version)
    return applied
