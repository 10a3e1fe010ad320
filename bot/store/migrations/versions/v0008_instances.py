"""Several instances on one store: claims on deliveries, leases, shared rate buckets

Revision 0008, after 0005. Released revisions are frozen history: never edit one, add a new
revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # Nullable columns with no default: a plain ALTER TABLE ... ADD COLUMN, SQLite included.
    op.add_column("outbox", sa.Column("claimed_by", sa.String(length=128), nullable=True))
    op.add_column(
        "outbox", sa.Column("claim_expires_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.create_index(
        "ix_outbox_platform_workspace_channel_id",
        "outbox",
        ["platform", "workspace", "channel", "id"],
    )
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=160), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_leases"),
    )
    op.create_table(
        "rate_buckets",
        sa.Column("name", sa.String(length=160), nullable=False),
        sa.Column("next_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_rate_buckets"),
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
