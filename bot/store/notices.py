"""Tallies announced between instances sharing a PostgreSQL store (``NOTIFY``/``LISTEN``).

The transaction that accepts a tally also runs ``pg_notify`` (:func:`announcement`, evaluated by
the tally's own INSERT; :func:`announce` on its own): PostgreSQL
delivers the notice when, and only if, that transaction commits, once, to every connection
listening on the channel (:meth:`bot.store.Database.listening`). The channel is
:data:`CHANNEL`, or one of its own per store schema (so stores side by side in one database
hear only their own tallies); the payload is ``{"count": id, "seq": n}``. SQLite stores are one
instance only: nothing is announced there.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sqlalchemy import ColumnElement, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection

CHANNEL = "tallybot_tally"
SHARDS = "tallybot_shards"
"""The channel on which an instance says it handed gateway shards on (``bot.cluster.shards``:
the others run a round at once and take them)."""


def channel(schema: str | None, name: str = CHANNEL) -> str:
    """The channel ``name`` of the store in ``schema`` (names of any length fit PostgreSQL's 63
    bytes)."""
    if schema is None:
        return name
    return f"{name}_{hashlib.blake2s(schema.encode(), digest_size=8).hexdigest()}"


async def shards_handed_on(conn: AsyncConnection, schema: str | None, by: str) -> None:
    """Say on :data:`SHARDS` that instance ``by`` handed shards on (the payload), when
    ``conn``'s transaction commits (PostgreSQL; nothing on SQLite)."""
    if conn.dialect.name == "postgresql":
        await conn.execute(
            text("SELECT pg_notify(:channel, :by)"), {"channel": channel(schema, SHARDS), "by": by}
        )


def announcement(
    conn: AsyncConnection, schema: str | None, count_id: str, seq: int
) -> ColumnElement[Any] | None:
    """The ``pg_notify`` that announces tally ``seq`` of ``count_id`` to every listening instance
    when ``conn``'s transaction commits, as an expression for a statement to evaluate (the
    tally's INSERT ... RETURNING: ``bot.store.tallies.append_after``); None on SQLite."""
    if conn.dialect.name != "postgresql":
        return None
    payload = json.dumps({"count": count_id, "seq": seq})
    return func.pg_notify(channel(schema), payload)


async def announce(conn: AsyncConnection, schema: str | None, count_id: str, seq: int) -> None:
    """:func:`announcement` in a statement of its own (PostgreSQL; nothing on SQLite)."""
    notify = announcement(conn, schema, count_id, seq)
    if notify is not None:
        await conn.execute(select(notify))


def heard(payload: str) -> tuple[str, int] | None:
    """The count id and seq a notice announces; None if it is not one of :func:`announcement`'s."""
    try:
        found = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(found, dict):
        return None
    count_id, seq = found.get("count"), found.get("seq")
    if not isinstance(count_id, str) or not isinstance(seq, int) or isinstance(seq, bool):
        return None
    return count_id, seq
