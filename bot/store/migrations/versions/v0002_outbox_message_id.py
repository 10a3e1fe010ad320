"""outbox.platform_message_id and the delivery-queue index (the pre-Alembic migration 2)

Revision 0002, after 0001. Released revisions are frozen history: never edit one, add a new
revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    # A nullable column with no default: a plain ALTER TABLE ... ADD COLUMN, SQLite included.
    op.add_column("outbox", sa.Column("platform_message_id", sa.Text(), nullable=True))
    op.create_index("ix_outbox_platform_status_id", "outbox", ["platform", "status", "id"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
