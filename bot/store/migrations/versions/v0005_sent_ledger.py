"""Sent ledger: what an adapter knows of its own numbered messages per place (issue 14)

Revision 0005, after 0004. A new table only, so no batch mode is needed on SQLite. Released
revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "sent_ledger",
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("place", sa.String(length=128), nullable=False),
        sa.Column("message", sa.BigInteger(), nullable=False),
        sa.Column("settled", sa.Boolean(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("platform", "place", "message", name="pk_sent_ledger"),
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
