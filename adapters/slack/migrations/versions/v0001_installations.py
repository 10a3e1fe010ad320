"""Slack's installations, their bots and OAuth states, now the Slack plug-in's own (issue 29)

Revision 0001 of the ``slack`` branch, its root. Until issue 29 the core's revision 0009 made
these tables; the core's revision 0020 keeps them where they hold rows (dropping them where they
are empty). So this revision adopts each table that is there already, with its rows, and
creates the others: an old store keeps its installations, a new one gets them from here.
Released revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: tuple[str, ...] | None = ("slack",)
depends_on: str | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _missing(name: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(name)


def upgrade() -> None:
    if _missing("slack_installations"):
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
    if _missing("slack_bots"):
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
    if _missing("oauth_states"):
        op.create_table(
            "oauth_states",
            sa.Column("state", sa.String(length=64), nullable=False),
            sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
            sa.PrimaryKeyConstraint("state", name="pk_oauth_states"),
        )
        op.create_index("ix_oauth_states_expires_at", "oauth_states", ["expires_at"])


def downgrade() -> None:
    raise NotImplementedError("tallybot's store only moves forward: restore a backup to go back")
