"""${message}

Revision ${up_revision}, after ${down_revision | comma,n}; created ${create_date}.
Released revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
${imports if imports else ""}
from bot.store.migrations import FORWARD_ONLY

revision: str = ${repr(up_revision)}
down_revision: str | None = ${repr(down_revision)}
branch_labels: str | None = ${repr(branch_labels)}
depends_on: str | None = ${repr(depends_on)}


def upgrade() -> None:
    ${upgrades if upgrades else "pass"}


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
