"""Request receipts: each signed Slack request taken in, kept while its signature verifies
(issue 27, part 4: a replayed request reaching another instance sharing the store is dropped
too, not only one reaching the instance that took it).

Revision 0016, after 0015: a new table, ``request_receipts``; and an index on the outbox by
count and time, for a count's recent alerts (a chart that could not be drawn is told once an
hour: ``bot.store.outbox.alerts_since``). Released revisions are frozen history: never edit
one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "request_receipts",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest", name="pk_request_receipts"),
    )
    op.create_index("ix_request_receipts_expires_at", "request_receipts", ["expires_at"])
    op.create_index("ix_outbox_count_id_created_at", "outbox", ["count_id", "created_at"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
