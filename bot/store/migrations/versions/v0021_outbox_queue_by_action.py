"""The delivery queue by action and weight: channels' posts and people's direct messages are
claimed by two queries, each reading only its own rows (issue 30, a count followed by 10,000
people: a claim read every queued direct message, several times a second).

Revision 0021, after 0020: an index on the outbox by platform, status, action, significance and
id (``bot.store.outbox.claims``). Released revisions are frozen history: never edit one, add a
new revision instead.
"""

from __future__ import annotations

from alembic import op

from bot.store.migrations import FORWARD_ONLY

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.create_index(
        "ix_outbox_platform_status_action_significant_id",
        "outbox",
        ["platform", "status", "action", "significant", "id"],
    )


def downgrade() -> None:
    raise NotImplementedError(FORWARD_ONLY)
