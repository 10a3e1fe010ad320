"""Whether a follow's place still sees its count, at the moment a message is sent: the store's
form of ``bot.commands.authority.can_see`` for a follow (``bot.domain.follow``).

A follow is made where its count could be seen, and following confers nothing elsewhere: when
the count is no longer seen there (a count of another server, workspace or chat made private
again, or archived), the person gets none of its messages, neither queued from then on
(``bot.store.follows.recipients``) nor already queued (cancelled when claimed or about to go:
``bot.store.outbox``). Seen again (made public again), they get its messages again. The
operator's private counts are seen where the operator lists, or by its admins, which the store
does not know: a follow of one is kept as made.

Seeing is also being there: a count of a server, workspace or chat that is not public goes by
DM to a follower who made the follow in that place only while they are still one of its
members (:func:`member_of`, read with the claim of the DM: ``Delivery.member``, which the
courier names in ``ChannelRef.member``; the adapter asks the platform, and one who left is
unfollowed as one who blocked the bot: ``bot.delivery.courier``).
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, ScalarSelect, and_, exists, not_, or_, select

from bot.domain.model import OPERATOR
from bot.store.schema import counts, follows


def seen() -> ColumnElement[bool]:
    """True where the follow (a row of ``follows`` in the statement) still sees its count."""
    c = counts.c
    tenant = follows.c.platform + ":" + follows.c.workspace
    return exists().where(
        c.id == follows.c.count_id,
        or_(c.owner == tenant, and_(c.archived.is_(False), or_(c.public, c.owner == OPERATOR))),
    )


def member_of(follow_id: ColumnElement[int]) -> ScalarSelect[str]:
    """The follower's id when the follow ``follow_id`` was made in its count's own place and
    the count is not public (its DMs go only to a member of that place), else NULL: a column
    of the statement that claims the follow's DMs (``bot.store.outbox.claims``), so that the
    courier asks the store nothing more per DM."""
    c = counts.c
    tenant = follows.c.platform + ":" + follows.c.workspace
    return (
        select(follows.c.user_id)
        .where(
            follows.c.id == follow_id,
            exists().where(c.id == follows.c.count_id, c.owner == tenant, not_(c.public)),
        )
        .scalar_subquery()
    )
