"""What a subscription hears is stored whole (revision 0007), on SQLite and PostgreSQL, and
upgrading a store to that revision keeps every subscription hearing what it did."""

from __future__ import annotations

from sqlalchemy import text

from bot.domain.subscription import ChannelRef, Close, Hear, Mode, Platform, Wants
from bot.store import Database, counts, migrations
from bot.store import subscriptions as sub_rows
from tests.store.rows import check_v1_rows, insert_v1_rows
from tests.store.test_migrations import Store, differences
from tests.test_store import BESSEMER, DISCORD, SLACK, T0

EVERYTHING = Wants(
    frozenset({Hear.CALLS, Hear.LEADS}),
    live=True,
    close=Close(tenths=25),
    mention="1234567890",
    thread=True,
    pin=True,
)


async def test_wants_round_trip(db: Database) -> None:
    async with db.begin() as conn:
        await counts.upsert(conn, BESSEMER)
        sub, created = await sub_rows.subscribe(conn, SLACK, BESSEMER.id, EVERYTHING, by="U", at=T0)
        other, _ = await sub_rows.subscribe(
            conn, DISCORD, BESSEMER.id, Wants(close=Close(votes=50)), by="U", at=T0
        )
    assert created
    assert sub.wants == EVERYTHING
    async with db.connect() as conn:
        assert (await sub_rows.get(conn, sub.id)) == sub
        found = await sub_rows.find(conn, DISCORD, BESSEMER.id)
    assert found == other
    assert found.wants.grammar() == "events close=50"
    assert EVERYTHING.grammar() == "live calls leads close=2.5% mention=@1234567890 thread pin"
    async with db.begin() as conn:  # in place: everything said anew
        again, created = await sub_rows.subscribe(conn, SLACK, BESSEMER.id, Mode.ALL, by="U", at=T0)
    assert (again.id, created, again.wants) == (sub.id, False, Wants.of(Mode.ALL))


async def test_upgrading_keeps_every_subscription_hearing_what_it_did(
    store_url: str, store_schema: str | None
) -> None:
    async with Store(store_url, store_schema) as engine:
        await migrations.upgrade(engine, to="0005", schema=store_schema)
        async with engine.begin() as conn:
            await insert_v1_rows(conn)  # a "live" subscription on Slack
            for i, mode in enumerate(("events", "all")):
                await conn.execute(
                    text(
                        "INSERT INTO subscriptions (platform, workspace, channel, count_id, mode,"
                        " enabled, disabled_reason, created_by, created_at, live_message_id)"
                        " SELECT 'discord', 'g1', :channel, count_id, :mode, enabled, NULL, 'D',"
                        " created_at, NULL FROM subscriptions WHERE platform = 'slack'"
                    ),
                    {"channel": f"c{i}", "mode": mode},
                )
        await migrations.upgrade(engine, schema=store_schema)
    async with Database(store_url, schema=store_schema) as db:
        async with db.connect() as conn:
            assert await conn.run_sync(differences) == []
            subs = await sub_rows.for_count(conn, BESSEMER.id)
        assert [(s.channel.channel, s.wants, s.mode) for s in subs] == [
            ("C01RWDSU", Wants.of(Mode.LIVE), Mode.LIVE),
            ("c0", Wants(), Mode.EVENTS),
            ("c1", Wants.of(Mode.ALL), Mode.ALL),
        ]
        assert subs[0].live_message_id == "m-9"
        await check_v1_rows(db)
        async with db.begin() as conn:
            channel = ChannelRef(Platform("discord"), "g1", "c0")
            changed, _ = await sub_rows.subscribe(
                conn, channel, BESSEMER.id, EVERYTHING, by="D", at=T0
            )
        assert changed.wants == EVERYTHING
