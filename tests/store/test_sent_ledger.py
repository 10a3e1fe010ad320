"""The sent ledger (revisions 0005 and 0015) on SQLite and PostgreSQL: a send is in doubt from
before it goes out until its answer or a repair accounts for it, copies are known by key and
silence, rows no probe can reach are forgotten, places and platforms are apart, what is written
survives reopening the store, and upgrades keep their rows."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from bot.store import Database, migrations, sent_ledger
from bot.store.schema import sent_ledger as sent_ledger_table
from bot.store.sent_ledger import KEEP, Copy, Doubt, SentLedger
from bot.testing.clock import FakeClock
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import T0

CHAT = "-1001500000001"


async def test_a_send_is_in_doubt_from_before_it_goes_out_until_its_answer(db: Database) -> None:
    async with db.begin() as conn:
        await sent_ledger.note(conn, "x", CHAT, 3, at=T0, horizon=50)  # a reply
        await sent_ledger.intend(conn, "x", CHAT, "tb1", silent=False, at=T0)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert known.doubt == Doubt(3, blind=False)  # a copy may be above 3
        assert (known.copies, known.others, known.top) == ((), {3}, 3)
        await sent_ledger.posted(conn, "x", CHAT, "tb1", 4, silent=False, at=T0, horizon=50)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert (known.doubt, known.copies) == (None, (Copy(4, silent=False),))
        assert (await sent_ledger.known(conn, "x", CHAT, "tb2")).others == {3, 4}


async def test_a_repair_keeps_its_doubt_until_resolved(db: Database) -> None:
    async with db.begin() as conn:
        await sent_ledger.intend(conn, "x", CHAT, "tb1", silent=False, at=T0)  # answer lost
        await sent_ledger.note(conn, "x", CHAT, 9, at=T0, horizon=50)
        await sent_ledger.intend(conn, "x", CHAT, "tb1", silent=True, at=T0)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert known.doubt == Doubt(None, blind=True)  # the first floor: nothing was known
        await sent_ledger.posted(conn, "x", CHAT, "tb1", 11, silent=True, at=T0, horizon=50)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert known.doubt == Doubt(None, blind=False)  # the silent send's answer came
        assert known.copies == (Copy(11, silent=True),)
        await sent_ledger.intend(conn, "x", CHAT, "tb1", silent=True, at=T0)  # answer lost
        await sent_ledger.intend(conn, "x", CHAT, "tb1", silent=True, at=T0)
        await sent_ledger.posted(conn, "x", CHAT, "tb1", 12, silent=True, at=T0, horizon=50)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert known.doubt == Doubt(None, blind=True)  # one silent copy may be unknown
        await sent_ledger.resolve(conn, "x", CHAT, "tb1", at=T0, removed=[12])
        await sent_ledger.resolve(conn, "x", CHAT, "tb1", at=T0, removed=[11])
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert (known.doubt, known.copies, known.top) == (None, (), 9)


async def test_rows_no_probe_can_reach_are_forgotten(db: Database) -> None:
    """Replies beyond the probe window go; a delivery's copy stays two days more."""
    async with db.begin() as conn:
        await sent_ledger.posted(conn, "x", CHAT, "tb1", 1, silent=False, at=T0, horizon=50)
        for reply in range(2, 201):
            await sent_ledger.note(conn, "x", CHAT, reply, at=T0, horizon=50)
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert known.others == set(range(150, 201))
        assert known.copies == (Copy(1, silent=False),)
        await sent_ledger.note(conn, "x", CHAT, 201, at=T0 + KEEP + timedelta(1), horizon=50)
        assert (await sent_ledger.known(conn, "x", CHAT, "tb1")).copies == ()
        rows = await conn.scalar(select(func.count()).select_from(sent_ledger_table))
        assert rows == 51  # 151 to 201


async def test_places_and_platforms_are_apart(db: Database) -> None:
    async with db.begin() as conn:
        await sent_ledger.posted(conn, "x", CHAT, "tb1", 10, silent=False, at=T0, horizon=50)
        await sent_ledger.intend(conn, "x", "42", "tb1", silent=False, at=T0)
        await sent_ledger.note(conn, "y", CHAT, 5, at=T0, horizon=50)
        assert (await sent_ledger.known(conn, "x", CHAT, "tb1")).copies == (Copy(10, False),)
        assert (await sent_ledger.known(conn, "x", "42", "tb1")).doubt == Doubt(None, False)
        assert (await sent_ledger.known(conn, "y", CHAT, "tb1")).others == {5}
        await sent_ledger.forget(conn, "x", CHAT)
        assert (await sent_ledger.known(conn, "x", CHAT, "tb1")).top is None
        assert (await sent_ledger.known(conn, "x", "42", "tb1")).doubt is not None


async def test_the_ledger_outlives_the_process(store_url: str, store_schema: str | None) -> None:
    clock = FakeClock()
    async with Database(store_url, schema=store_schema) as db:
        ledger = SentLedger(db, "x", clock)
        await ledger.intend(CHAT, "tb1", silent=False)
        clock.advance(60)
        await ledger.note(CHAT, 21, horizon=50)
    async with Database(store_url, schema=store_schema) as db:
        again = SentLedger(db, "x", FakeClock())
        known = await again.known(CHAT, "tb1")
        assert (known.doubt, known.others) == (Doubt(None, False), {21})


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
            await sent_ledger.posted(conn, "x", CHAT, "tb1", 1, silent=False, at=T0, horizon=9)
        async with db.connect() as conn:
            assert (await sent_ledger.known(conn, "x", CHAT, "tb1")).copies == (Copy(1, False),)


async def test_upgrading_to_ledger_keys_keeps_the_ids_known(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0014", schema=store_schema)
        async with engine.begin() as conn:
            await conn.execute(
                sent_ledger_table.insert(),
                [{"platform": "x", "place": CHAT, "message": 7, "settled": True, "at": T0}],
            )
        assert "0015" in await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db, db.connect() as conn:
        assert await conn.run_sync(differences) == []
        known = await sent_ledger.known(conn, "x", CHAT, "tb1")
        assert (known.top, known.others, known.copies) == (7, {7}, ())
