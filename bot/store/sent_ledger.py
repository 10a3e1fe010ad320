"""What an adapter knows of its own numbered messages, per place, kept across restarts.

A platform with no idempotency key and no history a bot can read repairs a post whose answer
was lost by probing the ids between the last one it accounts for and a new silent copy. That
needs, per place (a chat), the highest *settled* id and the ids above it that are the bot's but
not deliveries (command replies). This module keeps them in ``sent_ledger``, one row per id:
each change is an INSERT (and a DELETE of the rows it makes useless), never a read-modify-write,
so two writers never lose each other's rows; the settled id is the highest settled row. Nothing
here names a platform; adapters get a :class:`SentLedger` from
``bot.platform.Context.sent_ledger``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.clock import Clock
from bot.store.db import Database
from bot.store.schema import sent_ledger
from bot.store.statements import insert_for


def _of(platform: str, place: str) -> ColumnElement[bool]:
    return and_(sent_ledger.c.platform == platform, sent_ledger.c.place == place)


async def settled(conn: AsyncConnection, platform: str, place: str) -> int | None:
    """The highest settled id in ``place`` (None: nothing settled there yet)."""
    found = await conn.scalar(
        select(func.max(sent_ledger.c.message)).where(_of(platform, place), sent_ledger.c.settled)
    )
    return None if found is None else int(found)


async def unsettled(conn: AsyncConnection, platform: str, place: str) -> frozenset[int]:
    """The ids noted in ``place`` (:func:`note`) above its highest settled id."""
    floor = (
        select(func.max(sent_ledger.c.message))
        .where(_of(platform, place), sent_ledger.c.settled)
        .scalar_subquery()
    )
    rows = await conn.scalars(
        select(sent_ledger.c.message).where(
            _of(platform, place),
            ~sent_ledger.c.settled,
            sent_ledger.c.message > func.coalesce(floor, -(2**63)),
        )
    )
    return frozenset(int(m) for m in rows)


async def settle(
    conn: AsyncConnection, platform: str, place: str, message: int, *, at: datetime
) -> None:
    """Every id up to ``message`` in ``place`` is accounted for; the settled id becomes at
    least ``message`` (never lower), and the rows below the settled id are deleted."""
    await conn.execute(
        insert_for(conn, sent_ledger)
        .values(platform=platform, place=place, message=message, settled=True, at=at)
        .on_conflict_do_update(
            index_elements=[sent_ledger.c.platform, sent_ledger.c.place, sent_ledger.c.message],
            set_={"settled": True, "at": at},
        )
    )
    top = await settled(conn, platform, place)
    if top is not None:
        await conn.execute(
            delete(sent_ledger).where(_of(platform, place), sent_ledger.c.message < top)
        )


async def note(
    conn: AsyncConnection, platform: str, place: str, message: int, *, at: datetime, horizon: int
) -> None:
    """The bot sent ``message`` in ``place``, and it is not a delivery (a command reply).

    Noted ids more than ``horizon`` below ``message`` are deleted: a repair probes at most
    ``horizon`` ids below a new message, which is above ``message``, so it never reaches them.
    Without this, a chat that gets only replies (no delivery to settle it) would grow forever.
    """
    await conn.execute(
        delete(sent_ledger).where(
            _of(platform, place), ~sent_ledger.c.settled, sent_ledger.c.message < message - horizon
        )
    )
    await conn.execute(
        insert_for(conn, sent_ledger)
        .values(platform=platform, place=place, message=message, settled=False, at=at)
        .on_conflict_do_nothing(
            index_elements=[sent_ledger.c.platform, sent_ledger.c.place, sent_ledger.c.message]
        )
    )


@dataclass(frozen=True, slots=True)
class SentLedger:
    """One platform's ledger on the store: each call is its own transaction."""

    db: Database
    platform: str
    clock: Clock

    async def settled(self, place: str) -> int | None:
        async with self.db.connect() as conn:
            return await settled(conn, self.platform, place)

    async def unsettled(self, place: str) -> frozenset[int]:
        async with self.db.connect() as conn:
            return await unsettled(conn, self.platform, place)

    async def settle(self, place: str, message: int) -> None:
        async with self.db.begin() as conn:
            await settle(conn, self.platform, place, message, at=self.clock.now())

    async def note(self, place: str, message: int, *, horizon: int) -> None:
        async with self.db.begin() as conn:
            await note(conn, self.platform, place, message, at=self.clock.now(), horizon=horizon)
