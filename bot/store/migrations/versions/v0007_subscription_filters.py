"""Subscriptions hear what they asked for: filters, close, a mention, thread and pin (issue 16)

Revision 0007, after 0005 (the lead re-chains at merge). Released revisions are frozen history:
never edit one, add a new revision instead.

The ``mode`` column keeps its values: ``events``, ``all`` and ``live`` are still what they meant
(it now holds the words of what a subscription hears, such as ``live calls``). New columns, with
every existing row given "no filter, no option": the closeness margins and the mention are
NULL, ``thread`` and ``pin`` false. The two booleans are added with a server default that is
dropped again (the store writes every value itself), in batch mode for SQLite.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(sa.Column("close_votes", sa.BigInteger(), nullable=True))
        batch.add_column(sa.Column("close_tenths", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("mention", sa.String(length=128), nullable=True))
        for name in ("thread", "pin"):
            batch.add_column(
                sa.Column(name, sa.Boolean(), nullable=False, server_default=sa.false())
            )
        batch.add_column(sa.Column("thread_message_id", sa.Text(), nullable=True))
    with op.batch_alter_table("subscriptions") as batch:
        for name in ("thread", "pin"):
            batch.alter_column(name, existing_type=sa.Boolean(), server_default=None)


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
