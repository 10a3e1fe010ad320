"""Challenges sustained and each update's headline as published (revision 0011, issue 24): they
round-trip, on SQLite and PostgreSQL, and upgrading keeps every tally (none sustained, no
headline kept: the page words those as it did)."""

from __future__ import annotations

from dataclasses import replace

from bot.store import Database, counts, migrations, tallies
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import BESSEMER, bessemer_tally


async def test_sustained_and_the_published_headline_round_trip(db: Database) -> None:
    sustained = bessemer_tally(463, 1100, challenged=500, sustained=5, received=3215)
    async with db.begin() as conn:
        await counts.upsert(conn, BESSEMER)
        published = replace(sustained, headline="First results: No union leads by 637")
        kept = await tallies.append(conn, published)
    async with db.connect() as conn:
        last = await tallies.last(conn, BESSEMER.id)
    assert last == kept
    assert last is not None
    assert (last.sustained, last.headline) == (5, "First results: No union leads by 637")


async def test_upgrading_to_sustained_and_headlines_keeps_every_tally(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0002", schema=store_schema)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)
        await migrations.upgrade(engine, to="0010", schema=store_schema)
        assert await migrations.upgrade(engine, to="0011", schema=store_schema) == ["0011"]
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
            kept = await tallies.history(conn, BESSEMER.id)
        assert kept
        assert {(t.sustained, t.headline) for t in kept} == {(0, "")}
        await check_v1_rows(db)
