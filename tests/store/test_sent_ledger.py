"""The sent ledger (revision 0005) on SQLite and PostgreSQL: the settled id only rises, noted ids
above it are kept and those below it (or far below the newest note) dropped, places and
platforms are apart, what is written survives reopening the store, and upgrading a 0004 store
keeps its rows."""

from __future__ import annotations

from sqlalchemy import func, select

from bot.store import Database, migrations, sent_ledger
from bot.store.schema import sent_ledger as sent_ledger_table
from bot.store.sent_ledger import SentLedger
from bot.testing.clock import FakeClock
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import T0

CHAT = "-1001500000001"


async def test_the_settled_id_only_rises(db: Database) -> None:
    async with db.begin() as conn:
        assert await sent_ledger.settled(conn, "x", CHAT) is None
        await sent_ledger.settle(conn, "x", CHAT, 7, at=T0)
        await sent_ledger.settle(conn, "x", CHAT, 5, at=T0)  # an older post settles late
        assert await sent_ledger.settled(conn, "x", CHAT) == 7
        await sent_ledger.settle(conn, "x", CHAT, 7, at=T0)  # again: no conflict
        await sent_ledger.settle(conn, "x", CHAT, 2**62, at=T0)
        assert await sent_ledger.settled(conn, "x", CHAT) == 2**62


async def test_noted_ids_above_the_settled_one_are_kept(db: Database) -> None:
    async with db.begin() as conn:
        await sent_ledger.note(conn, "x", CHAT, 3, at=T0, horizon=50)  # before anything settled
        await sent_ledger.note(conn, "x", CHAT, 3, at=T0, horizon=50)  # noted twice: one row
        assert await sent_ledger.unsettled(conn, "x", CHAT) == {3}
        await sent_ledger.settle(conn, "x", CHAT, 4, at=T0)
        await sent_ledger.note(conn, "x", CHAT, 6, at=T0, horizon=50)
        await sent_ledger.note(conn, "x", CHAT, 9, at=T0, horizon=50)
        assert await sent_ledger.unsettled(conn, "x", CHAT) == {6, 9}
        await sent_ledger.settle(conn, "x", CHAT, 8, at=T0)
        assert await sent_ledger.unsettled(conn, "x", CHAT) == {9}
        assert await sent_ledger.settled(conn, "x", CHAT) == 8


async def test_replies_no_probe_can_reach_are_forgotten(db: Database) -> None:
    """A chat that gets only replies never settles: its notes stay within the probe window."""
    async with db.begin() as conn:
        for reply in range(1, 201):
            await sent_ledger.note(conn, "x", CHAT, reply, at=T0, horizon=50)
        assert await sent_ledger.unsettled(conn, "x", CHAT) == set(range(150, 201))
        rows = await conn.scalar(select(func.count()).select_from(sent_ledger_table))
        assert rows == 51


async def test_places_and_platforms_are_apart(db: Database) -> None:
    async with db.begin() as conn:
        await sent_ledger.settle(conn, "x", CHAT, 10, at=T0)
        await sent_ledger.note(conn, "x", CHAT, 12, at=T0, horizon=50)
        await sent_ledger.settle(conn, "x", "42", 3, at=T0)
        await sent_ledger.settle(conn, "y", CHAT, 1, at=T0)
        await sent_ledger.note(conn, "y", CHAT, 5, at=T0, horizon=50)
        assert await sent_ledger.settled(conn, "x", CHAT) == 10
        assert await sent_ledger.settled(conn, "x", "42") == 3
        assert await sent_ledger.settled(conn, "y", CHAT) == 1
        assert await sent_ledger.unsettled(conn, "x", CHAT) == {12}
        assert await sent_ledger.unsettled(conn, "y", CHAT) == {5}
        assert await sent_ledger.unsettled(conn, "x", "42") == frozenset()


async def test_the_ledger_outlives_the_process(store_url: str, store_schema: str | None) -> None:
    clock = FakeClock()
    async with Database(store_url, schema=store_schema) as db:
        ledger = SentLedger(db, "x", clock)
        await ledger.settle(CHAT, 20)
        clock.advance(60)
        await ledger.note(CHAT, 21, horizon=50)
    async with Database(store_url, schema=store_schema) as db:
        again = SentLedger(db, "x", FakeClock())
        assert await again.settled(CHAT) == 20
        assert await again.unsettled(CHAT) == {21}


async def test_upgrading_to_the_sent_ledger_keeps_every_row(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0004", schema=store_schema)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)
        assert "0005" in await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
        await check_v1_rows(db)
        async with db.begin() as conn:
            await sent_ledger.settle(conn, "x", CHAT, 1, at=T0)
        async with db.connect() as conn:
            assert await sent_ledger.settled(conn, "x", CHAT) == 1
