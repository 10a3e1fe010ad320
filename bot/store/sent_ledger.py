"""What an adapter knows of its own numbered messages, per place, kept across restarts.

A platform with no idempotency key and no history a bot can read repairs a post whose answer
was lost by probing the ids where a copy may be. That needs, per place (a chat):

- every message of the bot's it got an answer for (``sent_ledger``, one row per id): a
  delivery's copy, with the delivery's key and whether it went out silently (:func:`posted`), or
  a command reply, which no probe may touch (:func:`note`);
- every send whose answer it does not have (``sent_doubts``, one row per delivery key), written
  *before* the request goes out (:func:`intend`), with the highest id known in the place then
  (the *floor*): a copy that send made is above it. It stays until a repair has accounted for
  every copy (:func:`resolve`), or the send's own answer comes back (:func:`posted`).

So after a crash anywhere (the request out, its answer recorded or not, the outbox marked or
not) the repair knows whether a copy may exist, which ids it may be among, and which copies
are known already. Each change is an INSERT or a DELETE, never a read-modify-write. Rows
further than ``horizon`` ids below the newest are forgotten (a delivery's copy only once it is
older than :data:`KEEP` too). Nothing here names a platform; adapters get a
:class:`SentLedger` from ``bot.platform.Context.sent_ledger``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, and_, case, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.base.clock import Clock
from bot.store.db import Database
from bot.store.schema import sent_doubts, sent_ledger
from bot.store.statements import insert_for

ON_ITS_WAY, LOST = 1, 2
"""``sent_doubts.blind``: a silent send is on its way; one's answer was lost."""
KEEP = timedelta(days=2)
"""How long a delivery's copy is remembered at least (a copy older than 48 hours cannot be
deleted on Telegram anyway)."""


@dataclass(frozen=True, slots=True)
class Copy:
    """A message that carries a delivery."""

    message: int
    silent: bool


@dataclass(frozen=True, slots=True)
class Doubt:
    """A send of a delivery whose answer is not known: a copy may be above ``floor`` (None:
    nothing was known in the place when it went out). ``blind``: a silent send (a repair's)
    is on its way or lost, so a copy found may be a silent one."""

    floor: int | None
    blind: bool


@dataclass(frozen=True, slots=True)
class Known:
    """What the ledger knows in a place about one delivery key."""

    top: int | None
    """The highest id known in the place (None: none)."""
    copies: tuple[Copy, ...]
    """The key's copies whose answer came back, lowest first."""
    doubt: Doubt | None
    """None: every send of the key is accounted for."""
    others: frozenset[int]
    """Ids of the bot's other messages (other deliveries, replies): never a copy of the key."""


def _rows(platform: str, place: str) -> ColumnElement[bool]:
    return and_(sent_ledger.c.platform == platform, sent_ledger.c.place == place)


def _doubts(platform: str, place: str) -> ColumnElement[bool]:
    return and_(sent_doubts.c.platform == platform, sent_doubts.c.place == place)


async def top(conn: AsyncConnection, platform: str, place: str) -> int | None:
    found = await conn.scalar(select(func.max(sent_ledger.c.message)).where(_rows(platform, place)))
    return None if found is None else int(found)


async def known(conn: AsyncConnection, platform: str, place: str, key: str) -> Known:
    rows = (
        await conn.execute(
            select(sent_ledger.c.message, sent_ledger.c.key, sent_ledger.c.silent)
            .where(_rows(platform, place))
            .order_by(sent_ledger.c.message)
        )
    ).all()
    doubt = (
        await conn.execute(
            select(sent_doubts.c.floor, sent_doubts.c.blind).where(
                _doubts(platform, place), sent_doubts.c.key == key
            )
        )
    ).first()
    return Known(
        top=int(rows[-1].message) if rows else None,
        copies=tuple(Copy(int(r.message), bool(r.silent)) for r in rows if r.key == key),
        doubt=None if doubt is None else Doubt(doubt.floor, doubt.blind > 0),
        others=frozenset(int(r.message) for r in rows if r.key != key),
    )


async def intend(
    conn: AsyncConnection, platform: str, place: str, key: str, *, silent: bool, at: datetime
) -> None:
    """A send of ``key`` is about to go out: until its answer (or a repair) is recorded, a copy
    may be above the highest id known now. An earlier doubt keeps its (lower) floor; a silent
    send while another one's answer is still missing marks that one lost (``blind`` 2)."""
    floor = await top(conn, platform, place)
    blind = sent_doubts.c.blind
    again = case((blind > 0, LOST), else_=ON_ITS_WAY) if silent else blind
    await conn.execute(
        insert_for(conn, sent_doubts)
        .values(
            platform=platform,
            place=place,
            key=key,
            floor=floor,
            blind=ON_ITS_WAY if silent else 0,
            at=at,
        )
        .on_conflict_do_update(
            index_elements=[sent_doubts.c.platform, sent_doubts.c.place, sent_doubts.c.key],
            set_={"blind": again, "at": at},
        )
    )


async def posted(
    conn: AsyncConnection,
    platform: str,
    place: str,
    key: str,
    message: int,
    *,
    silent: bool,
    at: datetime,
    horizon: int,
) -> None:
    """``key`` went out as ``message`` (``silent``: a repair's silent send), and the answer came
    back. A notified send is only made when nothing of ``key`` was in doubt, so its answer
    settles the doubt its own :func:`intend` wrote; a silent send's doubt stays for the repair."""
    await _insert_copy(conn, platform, place, key, Copy(message, silent), at=at)
    mine = and_(_doubts(platform, place), sent_doubts.c.key == key)
    if not silent:
        await conn.execute(delete(sent_doubts).where(mine))
    else:
        await conn.execute(
            update(sent_doubts).where(mine, sent_doubts.c.blind == ON_ITS_WAY).values(blind=0)
        )
    await _prune(conn, platform, place, message, at=at, horizon=horizon)


async def resolve(
    conn: AsyncConnection,
    platform: str,
    place: str,
    key: str,
    *,
    at: datetime,
    removed: Collection[int] = (),
    kept: Copy | None = None,
) -> None:
    """Every copy of ``key`` is accounted for: its doubt goes, and so do the copies deleted;
    the one ``kept`` (found by a probe, maybe) is known as the key's from now on."""
    if kept is not None:
        await _insert_copy(conn, platform, place, key, kept, at=at)
    await conn.execute(
        delete(sent_doubts).where(_doubts(platform, place), sent_doubts.c.key == key)
    )
    if removed:
        await conn.execute(
            delete(sent_ledger).where(
                _rows(platform, place), sent_ledger.c.message.in_(list(removed))
            )
        )


async def _insert_copy(
    conn: AsyncConnection, platform: str, place: str, key: str, copy: Copy, *, at: datetime
) -> None:
    await conn.execute(
        insert_for(conn, sent_ledger)
        .values(
            platform=platform,
            place=place,
            message=copy.message,
            settled=True,
            at=at,
            key=key,
            silent=copy.silent,
        )
        .on_conflict_do_update(
            index_elements=[sent_ledger.c.platform, sent_ledger.c.place, sent_ledger.c.message],
            set_={"settled": True, "key": key, "silent": copy.silent, "at": at},
        )
    )


async def note(
    conn: AsyncConnection, platform: str, place: str, message: int, *, at: datetime, horizon: int
) -> None:
    """The bot sent ``message`` in ``place``, and it is not a delivery (a command reply)."""
    await conn.execute(
        insert_for(conn, sent_ledger)
        .values(
            platform=platform,
            place=place,
            message=message,
            settled=False,
            at=at,
            key=None,
            silent=False,
        )
        .on_conflict_do_nothing(
            index_elements=[sent_ledger.c.platform, sent_ledger.c.place, sent_ledger.c.message]
        )
    )
    await _prune(conn, platform, place, message, at=at, horizon=horizon)


async def forget(conn: AsyncConnection, platform: str, place: str) -> None:
    """Everything about ``place`` (it is gone: a group that became a supergroup)."""
    await conn.execute(delete(sent_ledger).where(_rows(platform, place)))
    await conn.execute(delete(sent_doubts).where(_doubts(platform, place)))


async def _prune(
    conn: AsyncConnection, platform: str, place: str, message: int, *, at: datetime, horizon: int
) -> None:
    """Rows more than ``horizon`` ids below ``message`` are beyond any probe: replies go, and
    delivery copies once they are older than :data:`KEEP`."""
    await conn.execute(
        delete(sent_ledger).where(
            _rows(platform, place),
            sent_ledger.c.message < message - horizon,
            or_(sent_ledger.c.key.is_(None), sent_ledger.c.at < at - KEEP),
        )
    )


@dataclass(frozen=True, slots=True)
class SentLedger:
    """One platform's ledger on the store: each call is its own transaction."""

    db: Database
    platform: str
    clock: Clock

    async def known(self, place: str, key: str) -> Known:
        async with self.db.connect() as conn:
            return await known(conn, self.platform, place, key)

    async def intend(self, place: str, key: str, *, silent: bool) -> None:
        async with self.db.begin() as conn:
            await intend(conn, self.platform, place, key, silent=silent, at=self.clock.now())

    async def posted(
        self, place: str, key: str, message: int, *, silent: bool, horizon: int
    ) -> None:
        async with self.db.begin() as conn:
            await posted(
                conn,
                self.platform,
                place,
                key,
                message,
                silent=silent,
                at=self.clock.now(),
                horizon=horizon,
            )

    async def resolve(
        self, place: str, key: str, *, removed: Collection[int] = (), kept: Copy | None = None
    ) -> None:
        async with self.db.begin() as conn:
            await resolve(
                conn, self.platform, place, key, at=self.clock.now(), removed=removed, kept=kept
            )

    async def note(self, place: str, message: int, *, horizon: int) -> None:
        async with self.db.begin() as conn:
            await note(conn, self.platform, place, message, at=self.clock.now(), horizon=horizon)

    async def forget(self, place: str) -> None:
        async with self.db.begin() as conn:
            await forget(conn, self.platform, place)
