"""Where each place's alerts go (issue 27, "a place never hears about its own counts'
problems"): a new table, ``place_alerts``, one row per place that has a channel for its alerts.

Revision 0013, after 0012. A new table only, so no batch mode is needed on SQLite. Places whose
counts were made before it have no row: their alerts go nowhere (logged) until an admin there
says ``alerts here``. Released revisions are frozen history: never edit one, add a new revision
instead."""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_table(
        "place_alerts",
        sa.Column("owner", sa.String(length=160), nullable=False),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("workspace", sa.String(length=128), nullable=False),
        sa.Column("channel", sa.String(length=128), nullable=False),
        sa.Column("set_by", sa.Text(), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("owner", name=op.f("pk_place_alerts")),
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
