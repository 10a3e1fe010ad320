"""Where alerts go: each place's own channel for its counts, the operator's for the rest.

An alert about a count (its source went stale or came back, a tally of it rejected, a channel
that stopped getting it) goes to whoever owns the count: a place's counts to the channel its
admins chose with ``alerts here`` (revision 0013), or, until they choose, the channel its first
count was made in (:func:`default`); the operator's counts, and what concerns no count (the
bot's own health), to the operator's ``[admins] alerts`` channels. A place never hears about
another's counts, nor the operator about a place's; a place with no channel yet (its counts all
made through the push API) is told nothing, and the alert is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.model import OPERATOR
from bot.domain.subscription import ChannelRef, Platform
from bot.store import counts as count_rows
from bot.store.schema import place_alerts
from bot.store.statements import insert_for

log = logging.getLogger(__name__)


async def get(conn: AsyncConnection, owner: str) -> ChannelRef | None:
    """The channel the place ``owner`` gets its alerts in, if it has one."""
    row = (await conn.execute(select(place_alerts).where(place_alerts.c.owner == owner))).first()
    if row is None:
        return None
    return ChannelRef(Platform(row.platform), row.workspace, row.channel)


def _values(owner: str, channel: ChannelRef, by: str, at: datetime) -> dict[str, object]:
    return {
        "owner": owner,
        "platform": channel.platform,
        "workspace": channel.workspace,
        "channel": channel.channel,
        "set_by": by,
        "set_at": at,
    }


async def choose(
    conn: AsyncConnection, owner: str, channel: ChannelRef, *, by: str, at: datetime
) -> None:
    """Send the place's alerts to ``channel`` from now on (``alerts here``)."""
    values = _values(owner, channel, by, at)
    stmt = insert_for(conn, place_alerts).values(values)
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[place_alerts.c.owner],
            set_={k: stmt.excluded[k] for k in values if k != "owner"},
        )
    )


async def default(
    conn: AsyncConnection, owner: str, channel: ChannelRef, *, by: str, at: datetime
) -> None:
    """``channel``, unless the place has chosen one (or got one from an earlier count)."""
    stmt = insert_for(conn, place_alerts).values(_values(owner, channel, by, at))
    await conn.execute(stmt.on_conflict_do_nothing(index_elements=[place_alerts.c.owner]))


async def clear(conn: AsyncConnection, owner: str) -> bool:
    """The place gets no alerts (``alerts off``); False if it had no channel."""
    result = await conn.execute(delete(place_alerts).where(place_alerts.c.owner == owner))
    return result.rowcount > 0


async def targets(
    conn: AsyncConnection, count_id: str | None, operator: Sequence[ChannelRef]
) -> tuple[ChannelRef, ...]:
    """Where an alert about ``count_id`` goes (``None`` or ``""``: about no count)."""
    owner = OPERATOR
    if count_id:
        count = await count_rows.get(conn, count_id)
        owner = count.owner if count is not None else OPERATOR
    if owner == OPERATOR:
        return tuple(operator)
    channel = await get(conn, owner)
    if channel is None:
        log.warning(
            "an alert about %s is told to nobody: %s has no alerts channel (alerts here)",
            count_id,
            owner,
        )
        return ()
    return (channel,)
