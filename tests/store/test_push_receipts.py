"""Push receipts on SQLite and PostgreSQL: a signature is new once, expired ones are deleted, and
of two stores taking the same signature at once exactly one finds it new."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sqlalchemy import insert

from bot.store import Database, migrations, push_receipts
from bot.store.push_receipts import Receipt
from bot.store.schema import push_receipts as receipts_table
from tests.store.test_migrations import Store, differences
from tests.test_store import T0

SIG = "v0=" + "a5f4652e2095" * 5 + "abcd"


async def test_a_signature_is_new_once_and_then_says_when_it_came(db: Database) -> None:
    receipt = Receipt(SIG, T0 + timedelta(minutes=5))
    async with db.begin() as conn:
        assert await push_receipts.remember(conn, receipt, "bessemer-2021", at=T0) is None
    later = T0 + timedelta(minutes=2)
    async with db.begin() as conn:
        assert await push_receipts.remember(conn, receipt, "bessemer-2021", at=later) == T0
        other = Receipt(SIG.replace("a", "b"), later + timedelta(minutes=5))
        assert await push_receipts.remember(conn, other, "bessemer-2021", at=later) is None
        assert await push_receipts.count(conn) == 2


async def test_expired_receipts_are_deleted_as_new_ones_come(db: Database) -> None:
    async with db.begin() as conn:
        for i in range(3):
            receipt = Receipt(f"{SIG}{i}", T0 + timedelta(minutes=5 + i))
            assert await push_receipts.remember(conn, receipt, "c", at=T0) is None
    at = T0 + timedelta(minutes=6, seconds=1)  # past the first two, not the third
    async with db.begin() as conn:
        fresh = Receipt("v0=new", at + timedelta(minutes=5))
        assert await push_receipts.remember(conn, fresh, "c", at=at) is None
        assert await push_receipts.count(conn) == 2
        # An expired signature that comes again is new again (the server refuses it as stale
        # before it gets here).
        assert await push_receipts.remember(conn, Receipt(f"{SIG}0", at), "c", at=at) is None


async def test_two_stores_taking_one_signature_at_once_agree(
    store_url: str, store_schema: str | None
) -> None:
    """Like two instances given the same request: one records it, the other is told."""
    receipt = Receipt(SIG, T0 + timedelta(minutes=5))
    async with (
        Database(store_url, schema=store_schema) as one,
        Database(store_url, schema=store_schema) as two,
    ):

        async def take(db: Database) -> object:
            async with db.begin() as conn:
                return await push_receipts.remember(conn, receipt, "c", at=T0)

        results = await asyncio.gather(take(one), take(two), take(one), take(two))
    assert sorted(results, key=lambda r: r is not None) == [None, T0, T0, T0]


async def test_one_signature_for_two_counts_is_two_receipts(db: Database) -> None:
    """A v0 signature covers no path: one body pushed to two counts in one second."""
    receipt = Receipt(SIG, T0 + timedelta(minutes=5))
    async with db.begin() as conn:
        assert await push_receipts.remember(conn, receipt, "count-a", at=T0) is None
        assert await push_receipts.remember(conn, receipt, "count-b", at=T0) is None
        assert await push_receipts.remember(conn, receipt, "count-b", at=T0) == T0
        assert await push_receipts.count(conn) == 2


async def test_upgrading_to_receipts_by_count_keeps_every_receipt(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0011", schema=store_schema)
        async with engine.begin() as conn:
            await conn.execute(
                insert(receipts_table).values(
                    signature=SIG,
                    count_id="count-a",
                    received_at=T0,
                    expires_at=T0 + timedelta(minutes=5),
                )
            )
        assert "0012" in await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
        async with db.begin() as conn:
            receipt = Receipt(SIG, T0 + timedelta(minutes=5))
            assert await push_receipts.remember(conn, receipt, "count-a", at=T0) == T0
            assert await push_receipts.remember(conn, receipt, "count-b", at=T0) is None
