"""Counts get an owner and a public flag; per-count grants and tenants' API keys (issue 15)

Revision 0006, after 0005. Every existing count is the operator's (they all came from the
configuration file) and private, as the file's ``public`` key defaults. The new columns of
``counts`` are added nullable, filled, then made NOT NULL (on SQLite batch mode rebuilds the
table, every row kept, foreign keys off around it: the runner). Released revisions are frozen
history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("counts") as batch:
        batch.add_column(sa.Column("owner", sa.String(length=160), nullable=True))
        batch.add_column(sa.Column("public", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("archived", sa.Boolean(), nullable=True))
        batch.add_column(sa.Column("source", sa.Text(), nullable=True))
        batch.add_column(sa.Column("edited_by", sa.Text(), nullable=True))
    counts = sa.table(
        "counts",
        sa.column("owner", sa.String()),
        sa.column("public", sa.Boolean()),
        sa.column("archived", sa.Boolean()),
    )
    op.execute(counts.update().values(owner="operator", public=False, archived=False))
    with op.batch_alter_table("counts") as batch:
        batch.alter_column("owner", existing_type=sa.String(length=160), nullable=False)
        batch.alter_column("public", existing_type=sa.Boolean(), nullable=False)
        batch.alter_column("archived", existing_type=sa.Boolean(), nullable=False)
        batch.create_index("ix_counts_owner", ["owner"], unique=False)
    op.create_table(
        "count_admins",
        sa.Column("count_id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("subject", sa.String(length=128), nullable=False),
        sa.Column("granted_by", sa.Text(), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["count_id"], ["counts.id"], name="fk_count_admins_count_id_counts"
        ),
        sa.PrimaryKeyConstraint("count_id", "kind", "subject", name="pk_count_admins"),
    )
    op.create_table(
        "api_keys",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("owner", sa.String(length=160), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("created_by", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_api_keys"),
        sa.UniqueConstraint("digest", name="uq_api_keys_digest"),
    )
    op.create_index("ix_api_keys_owner", "api_keys", ["owner"], unique=False)


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
