"""Converting a store made before Alembic, whose version is in a ``schema_version`` table.

The hand-written runner that came before recorded one row per applied migration there (1:
create the tables; 2: ``outbox.platform_message_id`` and the delivery-queue index). Revisions
0001 and 0002 make exactly the same tables, so such a store is stamped at the matching revision
and ``schema_version`` is dropped; no table is touched and every row stays. This runs inside
the upgrade's transaction, under its lock, so a failed upgrade leaves the store unconverted.
"""

from __future__ import annotations

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text

from bot.errors import StoreError

LEGACY_TABLE = "schema_version"
REVISION_OF = {1: "0001", 2: "0002"}
"""The Alembic revision each pre-Alembic schema version equals."""


def convert_legacy(conn: Connection, scripts: ScriptDirectory) -> str | None:
    """Stamp a pre-Alembic store at its revision and drop ``schema_version``; return the
    revision stamped, or ``None`` when there was nothing to convert."""
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
