"""Revision 0006: counts have an owner and a public flag; upgrading a store of today keeps every
count, tally, subscription and audit row and gives its counts to the operator, on SQLite and
PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import select

from bot.domain.model import OPERATOR
from bot.store import Database, counts, migrations
from bot.store.schema import counts as counts_table
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import BESSEMER


async def test_upgrading_gives_every_count_to_the_operator_and_keeps_every_row(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0005", schema=store_schema)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)
        assert "0006" in await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
            row = (await conn.execute(select(counts_table))).one()
        assert (row.owner, row.public, row.archived, row.source, row.edited_by) == (
            OPERATOR,
            False,
            False,
            None,
            None,
        )
        await check_v1_rows(db)  # the count (the operator's, private), tally, sub, audit row


async def test_owner_public_and_archived_round_trip(db: Database) -> None:
    mine = replace(BESSEMER, owner="discord:81384788765712384", public=True)
    async with db.begin() as conn:
        await counts.upsert(conn, mine, edited_by="discord:1 (ana)")
    async with db.connect() as conn:
        assert await counts.get(conn, BESSEMER.id) == mine
        assert await counts.edited_by(conn, BESSEMER.id) == "discord:1 (ana)"
    async with db.begin() as conn:
        await counts.upsert(conn, replace(mine, archived=True))
    async with db.connect() as conn:
        assert await counts.all_counts(conn) == []
        assert await counts.all_counts(conn, archived=True) == [replace(mine, archived=True)]
        assert await counts.edited_by(conn, BESSEMER.id) is None
