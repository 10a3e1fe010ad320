"""Figures and sequence numbers as BIGINT (issue 11: 2^31 ballots or more failed on PostgreSQL)

Revision 0003, after 0002. Released revisions are frozen history: never edit one, add a new
revision instead.

PostgreSQL: ALTER COLUMN ... TYPE BIGINT, rewriting the three tables. SQLite: its INTEGER is
64 bits already, but the declared type changes too (so the store says what it holds and
matches ``bot.store.schema``): batch mode rebuilds each table (copy, drop, rename) with foreign
keys off around it (the runner), every row and id kept.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

WIDENED = {
    "counts": {"eligible": True, "received": True},
    "outbox": {"tally_seq": True},
    "tallies": {"seq": False, "void": False, "challenged": False, "received": True},
}
"""Table -> column -> nullable."""


def upgrade() -> None:
    for table, columns in WIDENED.items():
        with op.batch_alter_table(table) as batch:
            for column, nullable in columns.items():
                batch.alter_column(
                    column,
                    existing_type=sa.Integer(),
                    type_=sa.BigInteger(),
                    existing_nullable=nullable,
                )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
