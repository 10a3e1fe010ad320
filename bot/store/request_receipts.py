"""Signed requests from a chat platform taken in, each remembered while its signature verifies.

Slack signs every HTTP-mode request over its timestamp and body, and a timestamp is taken up to
five minutes off: inside that window a captured request verifies again, on any instance. What
names a request (its signature, its own id such as ``trigger_id``) is kept here, hashed, until
it stops verifying, so that the second arrival of a request is known whichever instance sharing
the store it reaches. Receipts past their window are deleted now and then as new ones come in.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.schema import request_receipts
from bot.store.statements import insert_for


def digest(name: str) -> str:
    """How ``name`` is kept: its SHA-256, so a receipt is bounded and says nothing."""
    return hashlib.sha256(name.encode()).hexdigest()


async def first(
    conn: AsyncConnection, names: Sequence[str], *, at: datetime, expires_at: datetime
) -> bool:
    """Whether none of ``names`` was taken in before (and not expired at ``at``); remembers
    each until ``expires_at`` either way (one kept but expired is taken over).

    One statement (``INSERT ... ON CONFLICT DO UPDATE ... WHERE`` expired), atomic under
    concurrency: of two instances taking the same request at once, one records it and the
    other is told it was seen. What expired is deleted by :func:`purge`.
    """
    unique = list(dict.fromkeys(names))
    if not unique:
        return True
    t = request_receipts.c
    stmt = insert_for(conn, request_receipts).values(
        [{"digest": digest(name), "expires_at": expires_at} for name in unique]
    )
    taken = await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=[t.digest],
            set_={"expires_at": stmt.excluded.expires_at},
            where=t.expires_at < at,
        ).returning(t.digest)
    )
    return len(taken.all()) == len(unique)


async def purge(conn: AsyncConnection, at: datetime) -> None:
    """Delete the receipts expired at ``at``."""
    await conn.execute(delete(request_receipts).where(request_receipts.c.expires_at < at))


async def count(conn: AsyncConnection) -> int:
    """How many receipts are kept (for tests and diagnostics)."""
    return int(await conn.scalar(select(func.count()).select_from(request_receipts)) or 0)
