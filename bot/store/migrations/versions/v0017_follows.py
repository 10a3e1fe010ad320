"""Follows: people following a count by direct message (issue 30, personal alerts).

Revision 0017, after 0016: a new table, ``follows``, one row per platform, person and count
(``bot.store.follows``). A new table only, so no batch mode is needed on SQLite. Released
revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "follows",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("inbox", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=32), nullable=False),
        sa.Column("close_votes", sa.BigInteger(), nullable=True),
        sa.Column("close_tenths", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["count_id"], ["counts.id"], name=op.f("fk_follows_count_id_counts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_follows")),
        sa.UniqueConstraint(
            "platform", "user_id", "count_id", name=op.f("uq_follows_platform_user_id_count_id")
        ),
    )
    op.create_index("ix_follows_count_id", "follows", ["count_id"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
