"""Signed pushes taken in, each remembered while its signature is fresh.

A push's signature covers its body, its timestamp, its method and path (the count it is sent
to; the deprecated ``v0`` scheme, only body and timestamp), and the server takes a timestamp up
to five minutes off (``bot.ops.signing``): inside that window the same request, captured, would
verify again. Its signature, with the count it was taken in for, is its receipt: one body sent
to two counts is two pushes. Recording it
in the transaction that stores the tally makes the second arrival of a request known, even on
another instance sharing the store; receipts past their window are deleted as new ones come in.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import push_receipts
from bot.store.statements import insert_for


@dataclass(frozen=True, slots=True)
class Receipt:
    """One signed request: its signature and the moment it stops verifying."""

    signature: str
    expires_at: datetime


async def remember(
    conn: AsyncConnection, receipt: Receipt, count_id: str, *, at: datetime
) -> datetime | None:
    """Record ``receipt``; ``None`` the first time, else when it was first received.

    Atomic under concurrency (``INSERT ... ON CONFLICT DO NOTHING``): of two instances taking the
    same request at once, one records it and the other is told it was seen. Expired receipts are
    deleted first, in the same transaction.
    """
    await conn.execute(delete(push_receipts).where(push_receipts.c.expires_at < at))
    inserted = await conn.execute(
        insert_for(conn, push_receipts)
        .values(
            signature=receipt.signature,
            count_id=count_id,
            received_at=at,
            expires_at=receipt.expires_at,
        )
        .on_conflict_do_nothing(
            index_elements=[push_receipts.c.count_id, push_receipts.c.signature]
        )
    )
    if inserted.rowcount == 1:
        return None
    first: datetime | None = await conn.scalar(
        select(push_receipts.c.received_at).where(
            push_receipts.c.count_id == count_id, push_receipts.c.signature == receipt.signature
        )
    )
    return first if first is not None else at


async def count(conn: AsyncConnection) -> int:
    """How many receipts are kept (for tests and diagnostics)."""
    return int(await conn.scalar(select(func.count()).select_from(push_receipts)) or 0)
