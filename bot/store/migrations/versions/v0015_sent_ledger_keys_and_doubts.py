"""Sent ledger keys and doubts: which delivery each of the bot's messages carries, and the sends
whose answer is not known yet (issue 25, Telegram posts exactly once)

Revision 0015, after 0014. Released revisions are frozen history:
never edit one, add a new revision instead.

``sent_ledger`` gains ``key`` (NULL for every existing row: an id known, carrying no delivery
the repair looks for) and ``silent`` (false for every existing row), the boolean added with a
server default that is dropped again (the store writes every value itself), in batch mode for
SQLite. ``sent_doubts`` is a new table.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("sent_ledger") as batch:
        batch.add_column(sa.Column("key", sa.String(length=64), nullable=True))
        batch.add_column(
            sa.Column("silent", sa.Boolean(), nullable=False, server_default=sa.false())
        )
    with op.batch_alter_table("sent_ledger") as batch:
        batch.alter_column("silent", existing_type=sa.Boolean(), server_default=None)
    op.create_table(
        "sent_doubts",
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("place", sa.String(length=128), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("floor", sa.BigInteger(), nullable=True),
        sa.Column("blind", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("platform", "place", "key", name="pk_sent_doubts"),
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
