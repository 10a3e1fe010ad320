"""Claiming deliveries: which instance sends what, and for how long.

On SQLite one instance runs (``bot.cluster.single``); on PostgreSQL any number of instances
share the outbox. Either way a dispatcher claims more while it sends (a slow channel holds up
no other), so the rule is the same: each claims due work with ``SELECT ... FOR UPDATE SKIP
LOCKED`` (no locks on SQLite, which has one writer) and marks it SENDING under a claim
(``claimed_by``, ``claim_expires_at``) that it renews while it sends (on a shared store). A
channel's deliveries stay in order across instances and while one is in flight: only the
*head* of a channel (its oldest open delivery, due now) can be claimed, and with it the due
deliveries queued behind it; a channel whose head is claimed, in flight or waiting for a retry
is claimed by nobody else. A delivery whose claim has expired (its instance died) goes back to
the queue with its ``sending_at`` kept, so that its next sender first confirms from the channel
whether it went out (``bot.delivery.courier``), never
resends blindly. A live instance's claims are never touched. Channels' heads are claimed before
people's direct messages (``DeliveryAction.DIRECT``): a fan-out to thousands of followers never
keeps a channel's post from being taken in hand; and within each kind calls and finals
(``significant``) before routine posts. A claimed direct message carries whether it may go only
to a member of its count's place (``Delivery.member``, a column of the claim's statement).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    bindparam,
    case,
    exists,
    false,
    or_,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.subscription import ChannelRef, Platform
from bot.store.outbox.queue import OPEN, Delivery, DeliveryAction, DeliveryStatus, _delivery
from bot.store.schema import outbox
from bot.store.sight import member_of

PENDING = str(DeliveryStatus.PENDING)
SENDING = str(DeliveryStatus.SENDING)
DIRECT = str(DeliveryAction.DIRECT)
_CHANNELS = [str(a) for a in DeliveryAction if a is not DeliveryAction.DIRECT]
_MEMBER = case((outbox.c.action == DIRECT, member_of(outbox.c.subscription_id))).label("member")
"""A direct message's ``Delivery.member``, read with its claim."""


async def claimable(
    conn: AsyncConnection,
    platform: Platform,
    *,
    now: datetime,
    limit: int,
    direct: int | None = None,
) -> list[Delivery]:
    """The due deliveries this instance may claim now, locked until the end of the transaction
    on PostgreSQL (see the module docstring); mark them with
    :func:`~bot.store.outbox.mark_sending` in the same transaction.

    At most ``limit`` channels' heads: channels' posts first, then people's direct messages
    (of at most ``direct`` people; None: no bound but ``limit``), each kind calls and finals
    (``significant``) first, then oldest first. Each kind is one query that reads only its own
    rows (the outbox's index by platform, status, action and weight): looking for a channel's
    post never reads the thousands of direct messages queued before it."""
    heads: list[Delivery] = []
    kinds: list[tuple[bool, int]] = [(False, limit)]
    dms = limit if direct is None else min(direct, limit)
    if dms > 0:
        kinds.append((True, dms))
    for dm, most in kinds:
        for significant in (True, False):
            room = min(most, limit - len(heads))
            if room <= 0:
                break
            got = await _heads(conn, platform, dm, significant, now, room)
            heads += got
            most -= len(got)
    if not heads:
        return []
    # Behind each head, nobody else can claim: take the due ones, up to the first that waits.
    head_of = {(d.channel.workspace, d.channel.channel): d.id for d in heads}
    rows = await conn.execute(
        select(outbox, _MEMBER)
        .where(
            outbox.c.platform == str(platform),
            outbox.c.status == PENDING,
            tuple_(outbox.c.workspace, outbox.c.channel).in_(list(head_of)),
        )
        .order_by(outbox.c.id)
    )
    behind: dict[ChannelRef, list[Delivery]] = defaultdict(list)
    stopped: set[ChannelRef] = set()
    for row in rows:
        d = _delivery(row, row.member)
        if d.id <= head_of[(d.channel.workspace, d.channel.channel)] or d.channel in stopped:
            continue
        if d.next_attempt_at > now:
            stopped.add(d.channel)
            continue
        behind[d.channel].append(d)
    out = [*heads]
    for followers in behind.values():
        out += followers
    return sorted(out, key=lambda d: d.id)


async def _heads(
    conn: AsyncConnection,
    platform: Platform,
    dm: bool,
    significant: bool,
    now: datetime,
    limit: int,
) -> list[Delivery]:
    """Up to ``limit`` channels' heads of one kind (``dm``: people's direct messages, else
    channels' posts) and weight, due now, oldest first."""
    params = {"platform": str(platform), "now": now, "limit": limit}
    rows = await conn.execute(_heads_of(dm, significant), params)
    return [_delivery(row, row.member) for row in rows]


@cache
def _heads_of(dm: bool, significant: bool) -> Select[Any]:
    """The statement of :func:`_heads` for one kind and weight (its parameters ``platform``,
    ``now`` and ``limit``), built once: four are run for every claim, and building each afresh
    (an alias of the outbox, its columns, the cache key) cost more than running it."""
    earlier = outbox.alias("earlier")
    earlier_open = exists().where(
        earlier.c.platform == outbox.c.platform,
        earlier.c.workspace == outbox.c.workspace,
        earlier.c.channel == outbox.c.channel,
        earlier.c.id < outbox.c.id,
        earlier.c.status.in_([str(s) for s in OPEN]),
    )
    kind = outbox.c.action == DIRECT if dm else outbox.c.action.in_(_CHANNELS)
    return (
        select(outbox, _MEMBER)
        .where(
            outbox.c.platform == bindparam("platform", type_=outbox.c.platform.type),
            outbox.c.status == PENDING,
            kind,
            outbox.c.significant == (true() if significant else false()),
            outbox.c.next_attempt_at <= bindparam("now", type_=outbox.c.next_attempt_at.type),
            ~earlier_open,
        )
        .order_by(outbox.c.id)
        .limit(bindparam("limit", type_=Integer()))
        .with_for_update(skip_locked=True, of=outbox)
    )


async def renew(conn: AsyncConnection, instance: str, *, until: datetime) -> int:
    """Extend every claim ``instance`` holds on a SENDING delivery to ``until``; how many."""
    result = await conn.execute(
        update(outbox)
        .where(outbox.c.claimed_by == instance, outbox.c.status == SENDING)
        .values(claim_expires_at=until)
    )
    return result.rowcount


async def release_expired(
    conn: AsyncConnection, platform: Platform, *, now: datetime, keep: str | None = None
) -> int:
    """Put back to PENDING the SENDING deliveries of ``platform`` whose claim expired before
    ``now`` (their instance died or stalled), keeping ``sending_at``; how many. ``keep``: an
    instance whose claims stay as they are (its own, still being sent while it drains, whose
    renewal came late)."""
    where = [
        outbox.c.platform == str(platform),
        outbox.c.status == SENDING,
        outbox.c.claim_expires_at < now,
    ]
    if keep is not None:
        where.append(or_(outbox.c.claimed_by.is_(None), outbox.c.claimed_by != keep))
    result = await conn.execute(
        update(outbox).where(*where).values(status=PENDING, claimed_by=None, claim_expires_at=None)
    )
    return result.rowcount
