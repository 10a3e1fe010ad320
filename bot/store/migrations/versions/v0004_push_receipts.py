"""Push receipts: each signed push taken in, kept while its signature is fresh (issue 11 #6)

Revision 0004, after 0003. Released revisions are frozen history: never edit one, add a new
revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "push_receipts",
        sa.Column("signature", sa.String(length=128), nullable=False),
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("signature", name="pk_push_receipts"),
    )
    op.create_index("ix_push_receipts_expires_at", "push_receipts", ["expires_at"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
