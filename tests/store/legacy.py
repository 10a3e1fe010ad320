"""A store as tallybot made it before Alembic: its hand-written runner, frozen here.

Until the move to Alembic, ``bot/store/migrations.py`` created the tables itself and kept its
version in a ``schema_version`` table (migrations 1 and 2). This copy of that code (trimmed to
what creates a store, no other change) makes such stores for the tests that check tallybot
converts them without losing a row. Frozen history: never edit it.
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
    insert,
    text,
)
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store.types import Id, UTCDateTime

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

schema_version = Table(
    "schema_version",
    MetaData(naming_convention=NAMING),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("applied_at", UTCDateTime, nullable=False),
)

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


async def create_legacy_store(engine: AsyncEngine, *, to: int = 2) -> None:
    """Make an empty store at legacy version ``to`` (1 or 2), as the old runner did it."""
    for migration in MIGRATIONS[:to]:
        async with engine.begin() as conn:
            if conn.dialect.name == "postgresql":
                await conn.execute(
                    text(
                        "SELECT pg_advisory_xact_lock("
                        "hashtext('tallybot.migrate:' || current_schema()))"
                    )
                )
            if migration.version == 1:
                await conn.run_sync(lambda c: schema_version.create(c, checkfirst=True))
            await migration.apply(conn)
            await conn.execute(
                insert(schema_version).values(
                    version=migration.version, name=migration.name, applied_at=datetime.now(UTC)
                )
            )
