"""Discord announcement channels: a subscription may publish, or follow one (issue 31)

Revision 0019, after 0018. Released revisions are frozen history:
never edit one, add a new revision instead.

New columns of ``subscriptions``: ``publish`` (its calls and finals are crossposted to every
channel that follows it; false for every existing row, added with a server default that is
dropped again, in batch mode for SQLite), ``via`` (the announcement channel it follows
instead of getting posts of its own; NULL: none) and ``follow_webhook`` (the webhook Discord
made in the channel for that follow, what ``unsubscribe`` deletes). Publish steps are outbox
rows of a new action (``publish``); the ``action`` column already holds any word.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("subscriptions") as batch:
        batch.add_column(
            sa.Column("publish", sa.Boolean(), nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("via", sa.String(length=128), nullable=True))
        batch.add_column(sa.Column("follow_webhook", sa.String(length=128), nullable=True))
    with op.batch_alter_table("subscriptions") as batch:
        batch.alter_column("publish", existing_type=sa.Boolean(), server_default=None)


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
