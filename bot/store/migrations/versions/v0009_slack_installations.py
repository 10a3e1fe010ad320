"""Slack installations, their bots and OAuth states: one tallybot serving many workspaces
(issue 15, "Many workspaces")

Revision 0009, after 0008 (the head of main when it was merged into this branch). New tables
only, so no batch mode is needed on SQLite. Released revisions are frozen history: never edit
one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | None = None
depends_on: str | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "slack_installations",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("enterprise_id", sa.String(length=32), nullable=True),
        sa.Column("team_id", sa.String(length=32), nullable=True),
        sa.Column("user_id", sa.String(length=32), nullable=True),
        sa.Column("is_enterprise_install", sa.Boolean(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("installed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_slack_installations"),
    )
    op.create_index(
        "ix_slack_installations_client_id_enterprise_id_team_id_user_id",
        "slack_installations",
        ["client_id", "enterprise_id", "team_id", "user_id"],
    )
    op.create_table(
        "slack_bots",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("client_id", sa.String(length=64), nullable=False),
        sa.Column("enterprise_id", sa.String(length=32), nullable=True),
        sa.Column("team_id", sa.String(length=32), nullable=True),
        sa.Column("is_enterprise_install", sa.Boolean(), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("installed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_slack_bots"),
    )
    op.create_index(
        "ix_slack_bots_client_id_enterprise_id_team_id",
        "slack_bots",
        ["client_id", "enterprise_id", "team_id"],
    )
    op.create_table(
        "oauth_states",
        sa.Column("state", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("state", name="pk_oauth_states"),
    )
    op.create_index("ix_oauth_states_expires_at", "oauth_states", ["expires_at"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
