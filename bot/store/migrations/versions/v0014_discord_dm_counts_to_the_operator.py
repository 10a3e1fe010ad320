"""The counts made in a Discord DM before each DM was a place of its own go to the operator
(issue 27, "every Discord DM is the same place").

Every DM used to be the one place ``discord:@me``: a private count made in one was seen from
every other. Only the operator's admins (``[discord] admin_users``) could make a count in a DM,
so those counts are the operator's: their owner becomes ``operator`` (seen where the operator's
private counts are), and nothing else changes.

Revision 0014, after 0013. Data only. Released revisions are frozen history: never edit one,
add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | None = None
depends_on: str | None = None

SHARED_DM = "discord:@me"


def upgrade() -> None:
    counts = sa.table("counts", sa.column("owner", sa.String(length=160)))
    op.execute(counts.update().where(counts.c.owner == SHARED_DM).values(owner="operator"))


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
