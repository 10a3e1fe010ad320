"""Slack's tables leave the core: the Slack plug-in's own branch keeps them (issue 29)

Revision 0020, after 0019. Revision 0009 made
``slack_installations``, ``slack_bots`` and ``oauth_states`` in every store; they belong to the
Slack plug-in now (``adapters/slack/tables.py``, its branch ``slack``). Where all three are
empty (every new store, and every store that never installed the Slack app through OAuth) they
are dropped, and the plug-in's branch makes them (when the plug-in is installed). Where any
holds a row they stay as they are, rows and all, and the plug-in's first revision adopts them:
no installation is lost, whatever is installed. Nothing else changes.
Released revisions are frozen history: never edit one, add a new revision instead.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | None = None
depends_on: str | None = None

MOVED = ("slack_installations", "slack_bots", "oauth_states")


def upgrade() -> None:
    conn = op.get_bind()
    there = [t for t in MOVED if sa.inspect(conn).has_table(t)]
    if any(conn.scalar(sa.text(f"SELECT count(*) FROM {t}")) for t in there):
        return  # rows to keep: the Slack plug-in's branch adopts the tables
    for table in there:
        op.drop_table(table)  # their indexes go with them


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
