"""Schedules and reminders: when a count starts or resumes, and each reminder queued (issue 30,
scheduled counts: a reminder survives a restart, a second instance and a kill -9, and is sent
once).

Revision 0018, after 0017: two new tables, ``schedules`` (one scheduled time a count) and
``reminders`` (one row per count, kind and time whose reminder was queued). Released
revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | None = None
depends_on: str | None = None

WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("at", WHEN, nullable=False),
        sa.Column("remind_before", sa.Integer(), nullable=True),
        sa.Column("moved_from", WHEN, nullable=True),
        sa.Column("set_by", sa.Text(), nullable=False),
        sa.Column("set_at", WHEN, nullable=False),
        sa.ForeignKeyConstraint(["count_id"], ["counts.id"], name="fk_schedules_count_id_counts"),
        sa.PrimaryKeyConstraint("count_id", name="pk_schedules"),
    )
    op.create_table(
        "reminders",
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("at", WHEN, nullable=False),
        sa.Column("queued_at", WHEN, nullable=False),
        sa.Column("deliveries", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("count_id", "kind", "at", name="pk_reminders"),
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
