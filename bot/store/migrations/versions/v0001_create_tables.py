"""Create the tables (the store's first layout, as the pre-Alembic runner's migration 1 made it)

Revision 0001, the first. Released revisions are frozen history: never edit one, add a new
revision instead. Constraint and index names are spelled out (they follow the naming convention
in ``bot.store.schema``), so that this revision keeps making exactly these names.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
"""BIGINT on PostgreSQL, INTEGER on SQLite (there the rowid)."""
WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "counts",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("choices", sa.Text(), nullable=False),
        sa.Column("rule_kind", sa.String(32), nullable=False),
        sa.Column("tie_holder", sa.String(32), nullable=True),
        sa.Column("threshold", sa.String(32), nullable=True),
        sa.Column("eligible", sa.Integer(), nullable=True),
        sa.Column("received", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_counts"),
    )
    op.create_table(
        "rejected_tallies",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("count_id", sa.String(64), nullable=False),
        sa.Column("tally", sa.Text(), nullable=False),
        sa.Column("reason", sa.String(64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_rejected_tallies"),
    )
    op.create_index("ix_rejected_tallies_count_id_id", "rejected_tallies", ["count_id", "id"])
    op.create_table(
        "audit_log",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("at", WHEN, nullable=False),
        sa.Column("actor", sa.Text(), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("count_id", sa.String(64), nullable=True),
        sa.Column("old", sa.Text(), nullable=True),
        sa.Column("new", sa.Text(), nullable=True),
        sa.Column("allowed", sa.Boolean(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_count_id_id", "audit_log", ["count_id", "id"])
    op.create_table(
        "outbox",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("subscription_id", ID, nullable=True),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("workspace", sa.String(128), nullable=False),
        sa.Column("channel", sa.String(128), nullable=False),
        sa.Column("count_id", sa.String(64), nullable=False),
        sa.Column("tally_seq", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(32), nullable=False),
        sa.Column("significant", sa.Boolean(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", WHEN, nullable=False),
        sa.Column("sending_at", WHEN, nullable=True),
        sa.Column("sent_at", WHEN, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_outbox"),
    )
    op.create_index("ix_outbox_subscription_id_status", "outbox", ["subscription_id", "status"])
    op.create_table(
        "tallies",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("count_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("votes", sa.Text(), nullable=False),
        sa.Column("observed_at", WHEN, nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("void", sa.Integer(), nullable=False),
        sa.Column("challenged", sa.Integer(), nullable=False),
        sa.Column("received", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("correction", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tallies"),
        sa.UniqueConstraint("count_id", "seq", name="uq_tallies_count_id_seq"),
        sa.ForeignKeyConstraint(["count_id"], ["counts.id"], name="fk_tallies_count_id_counts"),
    )
    op.create_table(
        "subscriptions",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("platform", sa.String(32), nullable=False),
        sa.Column("workspace", sa.String(128), nullable=False),
        sa.Column("channel", sa.String(128), nullable=False),
        sa.Column("count_id", sa.String(64), nullable=False),
        sa.Column("mode", sa.String(32), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("live_message_id", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_subscriptions"),
        sa.UniqueConstraint(
            "platform",
            "workspace",
            "channel",
            "count_id",
            name="uq_subscriptions_platform_workspace_channel_count_id",
        ),
        sa.ForeignKeyConstraint(
            ["count_id"], ["counts.id"], name="fk_subscriptions_count_id_counts"
        ),
    )
    op.create_index("ix_subscriptions_count_id", "subscriptions", ["count_id"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
