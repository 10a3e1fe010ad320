"""What ingesting a tally costs the store, in statements (deterministic, unlike time): a first
tally, the same figures again, and a changed tally, for a count with one subscribed channel."""

from __future__ import annotations

import re

from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.helpers import bessemer, statements, tally

CONSOLE = ChannelRef(Platform("console"), "local", "console")


def kind(sql: str) -> str:
    """A statement as ``VERB table`` (``SELECT counts``, ``INSERT tallies``...), ``FOR ...``
    kept: what a failure shows."""
    verb = sql.split(None, 1)[0].upper()
    table = re.search(r"\b(?:FROM|INTO|UPDATE)\s+([\w.\"]+)", sql, re.IGNORECASE)
    lock = re.search(r"\bFOR (?:NO KEY )?UPDATE\b", sql)
    name = table.group(1).strip('"') if table else ""
    return " ".join(w for w in (verb, name, lock.group(0) if lock else "") if w)


async def test_an_ingest_costs_the_store_few_statements(db: Database) -> None:
    clock = FakeClock()
    async with db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
        await sub_rows.subscribe(conn, CONSOLE, "bessemer-2021", Mode.ALL, by="t", at=clock.now())
    pipeline = Pipeline(db, clock)
    pg = db.dialect_name == "postgresql"
    begin = [] if pg else ["BEGIN"]  # SQLite's BEGIN IMMEDIATE is a statement of its own
    reads = ["SELECT counts FOR NO KEY UPDATE" if pg else "SELECT counts", "SELECT tallies"]
    fan_out = ["SELECT subscriptions", "SELECT follows"]
    # SQLite: the outbox's ids are read around one executemany (bot.store.outbox.queue.enqueue)
    queue = ["INSERT outbox"] if pg else ["SELECT outbox", "INSERT outbox", "SELECT outbox"]
    for figures, expected in (
        ((84, 201), [*begin, *reads, "INSERT tallies", *fan_out, *queue]),  # the first
        ((84, 201), [*begin, *reads]),  # no change
        ((90, 210), [*begin, *reads, "INSERT tallies", *fan_out, *queue]),
    ):
        with statements() as sent:
            await pipeline.ingest(tally(*figures))
        assert [kind(sql) for sql in sent] == expected
