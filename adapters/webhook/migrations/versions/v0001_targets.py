"""Webhook targets registered in chat (issue 31)

Revision 0001 of the ``webhook`` branch, its root. Released revisions are frozen history: never
edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: tuple[str, ...] | None = ("webhook",)
depends_on: str | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "webhook_targets",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("place", sa.String(length=160), nullable=False),
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("secret", sa.String(length=64), nullable=True),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_targets"),
    )
    op.create_index("ix_webhook_targets_place", "webhook_targets", ["place"])


def downgrade() -> None:
    raise NotImplementedError("tallybot's store only moves forward: restore a backup to go back")
