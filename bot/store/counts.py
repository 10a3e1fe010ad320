"""Counts: the contests being counted, with their choices and decision rule."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.limits import MAX_LABEL, MAX_TITLE, cut
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.store.codec import (
    choices_from_json,
    choices_to_json,
    threshold_from_text,
    threshold_to_text,
)
from bot.store.outbox.queue import OPEN
from bot.store.schema import (
    count_admins,
    counts,
    follows,
    outbox,
    rejected_tallies,
    reminders,
    schedules,
    subscriptions,
    tallies,
)
from bot.store.statements import insert_for, require_changed


def _values(count: Count) -> dict[str, Any]:
    return {
        "id": count.id,
        "title": count.title,
        "choices": choices_to_json(count.choices),
        "rule_kind": str(count.rule.kind),
        "tie_holder": count.rule.tie_holder,
        "threshold": threshold_to_text(count.rule.threshold),
        "eligible": count.eligible,
        "received": count.received,
        "status": str(count.status),
        "owner": count.owner,
        "public": count.public,
        "archived": count.archived,
        "pace": count.pace,
    }


def _count(row: Row[Any]) -> Count:
    """The stored count; a title or label stored before the limits is cut to them."""
    choices = tuple(Choice(c.id, cut(c.label, MAX_LABEL)) for c in choices_from_json(row.choices))
    return Count(
        id=row.id,
        title=cut(row.title, MAX_TITLE),
        choices=choices,
        rule=DecisionRule(
            RuleKind(row.rule_kind), row.tie_holder, threshold_from_text(row.threshold)
        ),
        eligible=row.eligible,
        received=row.received,
        status=CountStatus(row.status),
        owner=row.owner,
        public=row.public,
        archived=row.archived,
        pace=row.pace,
    )


async def upsert(conn: AsyncConnection, count: Count, *, edited_by: str | None = None) -> None:
    """Store ``count``: insert it, or overwrite every field of the stored count with that id.
    ``edited_by``: who changed it in chat (kept, so that the file's seed does not overwrite it
    silently); None: the file (or the code) says so."""
    values = {**_values(count), "edited_by": edited_by}
    stmt = insert_for(conn, counts).values(values)
    stmt = stmt.on_conflict_do_update(
        index_elements=[counts.c.id],
        set_={name: stmt.excluded[name] for name in values if name != "id"},
    )
    await conn.execute(stmt)


async def insert(conn: AsyncConnection, count: Count, *, edited_by: str) -> bool:
    """Store a new count; False (nothing written) if the id is taken, by any owner."""
    stmt = insert_for(conn, counts).values({**_values(count), "edited_by": edited_by})
    return (await conn.execute(stmt.on_conflict_do_nothing())).rowcount > 0


def taken(count_id: str) -> str:
    """Why a new count cannot have the id ``count_id``: the same words whoever owns the count
    that has it, and whether or not the asker may see it (one namespace for every place)."""
    return f"the name {count_id} is taken (names are shared by every place); pick another"


async def set_archived(conn: AsyncConnection, count_id: str, archived: bool, *, by: str) -> None:
    """Archive the count (or take it out of the archive), as changed in chat by ``by``."""
    result = await conn.execute(
        update(counts).where(counts.c.id == count_id).values(archived=archived, edited_by=by)
    )
    require_changed(result, f"count {count_id!r}")


_BY_ID = select(counts).where(counts.c.id == bindparam("count_id"))
_LOCKED = _BY_ID.with_for_update(key_share=True)
"""Built once: a statement built per call costs more CPU than the database's answer."""


async def get(conn: AsyncConnection, count_id: str) -> Count | None:
    """The count with id ``count_id``, or ``None``."""
    row = (await conn.execute(_BY_ID, {"count_id": count_id})).first()
    return None if row is None else _count(row)


async def lock(conn: AsyncConnection, count_id: str) -> Count | None:
    """As :func:`get`, and the count's row is locked until the transaction ends: the writers of
    one count's tallies take turns from here (``bot.ingest.pipeline``), each reading the last
    tally only once the one before has committed. PostgreSQL: ``SELECT ... FOR NO KEY UPDATE``
    (rows that only refer to the count, its subscriptions' and deliveries', are not held up);
    SQLite: a store transaction holds the one write lock from its start already."""
    row = (await conn.execute(_LOCKED, {"count_id": count_id})).first()
    return None if row is None else _count(row)


async def all_counts(conn: AsyncConnection, *, archived: bool = False) -> list[Count]:
    """Every stored count, by id (the archived ones too if ``archived``)."""
    stmt = select(counts).order_by(counts.c.id)
    if not archived:
        stmt = stmt.where(counts.c.archived.is_(False))
    return [_count(row) for row in await conn.execute(stmt)]


async def edited_by(conn: AsyncConnection, count_id: str) -> str | None:
    """Who last changed the count in chat (None: nobody, or no such count)."""
    return await conn.scalar(select(counts.c.edited_by).where(counts.c.id == count_id))


async def source_json(conn: AsyncConnection, count_id: str) -> str | None:
    """The source set from chat for the count, as stored JSON (None: the file's, or none)."""
    return await conn.scalar(select(counts.c.source).where(counts.c.id == count_id))


async def set_source_json(conn: AsyncConnection, count_id: str, source: str | None) -> None:
    """Set (or clear, with None) the source set from chat."""
    result = await conn.execute(update(counts).where(counts.c.id == count_id).values(source=source))
    require_changed(result, f"count {count_id!r}")


async def delete(conn: AsyncConnection, count_id: str) -> bool:
    """Delete the count and what hangs off it (its tallies, grants, subscriptions, follows and
    finished
    deliveries); False if there was none. The audit log keeps naming it. Deliveries still
    open stay, orphaned as after ``unsubscribe``: the worker drops those waiting for their turn
    and records the one whose request is on its way when its answer comes, as for any other."""
    finished = outbox.c.status.not_in([str(s) for s in OPEN])
    await conn.execute(outbox.delete().where(outbox.c.count_id == count_id, finished))
    for table in (
        subscriptions,
        follows,
        count_admins,
        tallies,
        rejected_tallies,
        schedules,
        reminders,
    ):
        await conn.execute(table.delete().where(table.c.count_id == count_id))
    result = await conn.execute(counts.delete().where(counts.c.id == count_id))
    return result.rowcount > 0


_SET_STATE = update(counts).where(counts.c.id == bindparam("count_id"))


async def set_state(
    conn: AsyncConnection, count_id: str, status: CountStatus, received: int | None
) -> None:
    """Set the count's status and number of ballots received (None: unknown), in one UPDATE;
    :class:`StoreError` if there is no such count."""
    if received is not None and received < 0:
        raise ValueError(f"received cannot be negative, got {received}")
    result = await conn.execute(
        _SET_STATE, {"count_id": count_id, "status": str(status), "received": received}
    )
    require_changed(result, f"count {count_id!r}")
