"""Figures and sequence numbers beyond 32 bits fit the store (revision 0003: BIGINT columns), on
SQLite and PostgreSQL, and upgrading a store to that revision keeps its data."""

from __future__ import annotations

from dataclasses import replace

from bot.store import Database, counts, migrations, outbox, tallies
from bot.store.outbox import DeliveryAction, NewDelivery
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import BESSEMER, SLACK, T0, bessemer_tally

BIG = 2**62 + 1
"""Far beyond PostgreSQL's INTEGER (2^31 - 1), within BIGINT (2^63 - 1)."""


async def test_figures_beyond_32_bits_round_trip(db: Database) -> None:
    big_count = replace(BESSEMER, eligible=BIG, received=BIG - 1)
    tally = bessemer_tally(BIG - 10, 3, void=BIG - 20, challenged=BIG - 30, received=BIG - 1)
    async with db.begin() as conn:
        await counts.upsert(conn, big_count)
        stored = await tallies.append(conn, tally)
        [delivery_id] = await outbox.enqueue(
            conn,
            [
                NewDelivery(
                    subscription_id=None,
                    channel=SLACK,
                    count_id=BESSEMER.id,
                    tally_seq=BIG,
                    action=DeliveryAction.ALERT,
                    significant=True,
                    payload="{}",
                    created_at=T0,
                )
            ],
        )
    async with db.connect() as conn:
        assert await counts.get(conn, BESSEMER.id) == big_count
        assert await tallies.last(conn, BESSEMER.id) == stored == tally.with_seq(1)
        got = await outbox.get(conn, delivery_id)
    assert got is not None
    assert got.tally_seq == BIG


async def test_upgrading_to_bigint_figures_keeps_every_row(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0002", schema=store_schema)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)
        assert await migrations.upgrade(engine, schema=store_schema) == [
            s.revision
            for s in reversed(list(migrations.scripts().walk_revisions()))
            if int(s.revision) > 2
        ]
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
        await check_v1_rows(db)
        async with db.begin() as conn:  # and big figures fit now
            await tallies.append(conn, bessemer_tally(BIG, 1200, minutes=5, received=BIG + 5))
            await counts.set_state(conn, BESSEMER.id, BESSEMER.status, BIG + 5)
        async with db.connect() as conn:
            last = await tallies.last(conn, BESSEMER.id)
            count = await counts.get(conn, BESSEMER.id)
        assert last is not None
        assert (last.votes["yes"], last.received, last.seq) == (BIG, BIG + 5, 3)
        assert count is not None
        assert count.received == BIG + 5
