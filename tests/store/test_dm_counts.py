"""Revision 0014: the counts of the one shared Discord DM place (``discord:@me``) go to the
operator, every other count as it was, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace

from bot.domain.model import OPERATOR
from bot.store import Database, counts, migrations
from tests.store.test_migrations import Store, differences
from tests.test_store import BESSEMER


async def test_the_shared_dm_places_counts_go_to_the_operator(
    store_url: str, store_schema: str | None
) -> None:
    shared = replace(BESSEMER, id="dm-secret", owner="discord:@me")
    server = replace(BESSEMER, id="local-7", owner="discord:81384788765712384")
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0013", schema=store_schema)
        async with engine.begin() as conn:
            for count in (shared, server, BESSEMER):
                await counts.upsert(conn, count)
        assert "0014" in await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db, db.connect() as conn:
        assert await conn.run_sync(differences) == []
        found = {c.id: c.owner for c in await counts.all_counts(conn)}
    assert found == {"dm-secret": OPERATOR, "local-7": server.owner, BESSEMER.id: OPERATOR}
