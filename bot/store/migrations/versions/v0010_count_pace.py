"""Counts: ``pace``, whether to say the pace of counting (issue 24, "the story organisers and
reporters ask for")

Revision 0010, after 0009. One column with a default for the rows there are, which is then
dropped (the code always says it). Released revisions are frozen history: never edit one, add a
new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("counts") as batch:
        batch.add_column(sa.Column("pace", sa.Boolean(), nullable=False, server_default=sa.false()))
    with op.batch_alter_table("counts") as batch:
        batch.alter_column("pace", existing_type=sa.Boolean(), server_default=None)


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
