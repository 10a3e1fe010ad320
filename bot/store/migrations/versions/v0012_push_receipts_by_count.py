"""Push receipts by count and signature (issue 27, "a signed push does not cover the count it
is sent to"): a ``v0`` signature covers the body and timestamp only, so one body sent to two
counts in the same second has one signature; keyed by it alone, the second push was refused as
a replay of the first.

Revision 0012, after 0011. The primary key becomes (count_id, signature); SQLite cannot alter a
primary key, so the table is rebuilt (batch mode: copy, drop, rename), every receipt kept.
Released revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    with op.batch_alter_table("push_receipts", recreate="always") as batch:
        batch.drop_constraint("pk_push_receipts", type_="primary")
        batch.create_primary_key("pk_push_receipts", ["count_id", "signature"])


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
