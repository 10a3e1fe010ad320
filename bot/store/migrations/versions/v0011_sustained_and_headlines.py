"""Tallies get challenges sustained and the headline each was published with (issue 24)

Revision 0011, after 0010. ``sustained`` (challenged ballots whose challenge was upheld) is 0
for every tally kept before: none had been sustained. ``headline`` is NULL for them: they were
published before headlines were kept, and the page words those as it did. Added with a server
default, so no row has to be rewritten (on SQLite batch mode rebuilds the table, every row
kept). Released revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("tallies", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("sustained", sa.BigInteger(), server_default="0", nullable=False)
        )
        batch_op.add_column(sa.Column("headline", sa.Text(), nullable=True))


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
