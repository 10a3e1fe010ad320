"""One row in every table of a store at revision 0001 (or pre-Alembic version 1), and the check
that an upgraded store still has each of them, whole, and goes on working."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.domain.model import CountStatus, TallyState
from bot.domain.subscription import Mode, Platform
from bot.store import Database, audit, codec, counts, outbox, subscriptions, tallies
from bot.store.types import UTCDateTime
from tests.test_store import BESSEMER, DISCORD, FINAL, SLACK, T0, bessemer_tally, delivery


async def insert_v1_rows(conn: AsyncConnection) -> None:
    """One row in every table, written as version 1 of the schema had them."""

    async def run(sql: str, **params: Any) -> None:
        stmt = text(sql)
        if "at" in params:
            stmt = stmt.bindparams(bindparam("at", type_=UTCDateTime()))
        await conn.execute(stmt, params)

    await run(
        "INSERT INTO counts VALUES ('bessemer-2021', 'Amazon BHM1, Bessemer', :choices,"
        " 'majority', 'no', NULL, 5876, 3215, 'counting')",
        choices='[["yes", "Yes (RWDSU)"], ["no", "No union"]]',
    )
    await run(
        "INSERT INTO tallies (count_id, seq, votes, observed_at, source, void, challenged,"
        " received, state, correction) VALUES ('bessemer-2021', 1, :votes, :at, 'nlrb',"
        " 0, 0, NULL, 'paused', :no)",
        votes='{"yes": 463, "no": 1100}',
        at=T0,
        no=False,
    )
    await run(
        "INSERT INTO rejected_tallies (count_id, tally, reason, detail, at) VALUES"
        " ('bessemer-2021', :tally, 'decreased', 'yes 463 -> 400', :at)",
        tally=codec.tally_to_json(bessemer_tally(400, 1100)),
        at=T0,
    )
    await run(
        "INSERT INTO subscriptions (platform, workspace, channel, count_id, mode, enabled,"
        " disabled_reason, created_by, created_at, live_message_id) VALUES ('slack',"
        " 'T024BE7LD', 'C01RWDSU', 'bessemer-2021', 'live', :yes, NULL, 'U-admin', :at, 'm-9')",
        yes=True,
        at=T0,
    )
    await run(
        "INSERT INTO audit_log (at, actor, action, count_id, old, new, allowed, detail) VALUES"
        " (:at, 'U-admin', 'subscribe', 'bessemer-2021', NULL, 'live', :yes, '')",
        at=T0,
        yes=True,
    )
    await run(
        "INSERT INTO outbox (subscription_id, platform, workspace, channel, count_id,"
        " tally_seq, action, significant, payload, created_at, status, attempts,"
        " next_attempt_at, sending_at, sent_at, last_error) SELECT id, 'slack',"
        " 'T024BE7LD', 'C01RWDSU', 'bessemer-2021', 1, 'edit_live', :no, '{}', :at, 'sending',"
        " 2, :at, :at, NULL, 'timeout' FROM subscriptions",
        no=False,
        at=T0,
    )


async def check_v1_rows(db: Database) -> None:
    """Every row :func:`insert_v1_rows` wrote reads back whole through the store's code, and
    the upgraded store takes new rows (the ids carry on)."""
    async with db.connect() as conn:
        count = await counts.get(conn, "bessemer-2021")
        history = await tallies.history(conn, "bessemer-2021")
        [rejected] = await tallies.rejected(conn, "bessemer-2021")
        [sub] = await subscriptions.for_channel(conn, SLACK)
        [entry] = await audit.recent(conn)
        [in_doubt] = await outbox.in_doubt(conn, Platform("slack"))
    assert count == BESSEMER.with_status(CountStatus.COUNTING)
    assert history == [bessemer_tally(463, 1100, state=TallyState.PAUSED, seq=1)]
    assert (rejected.tally, rejected.reason, rejected.at) == (
        bessemer_tally(400, 1100),
        "decreased",
        T0,
    )
    assert (sub.mode, sub.live_message_id, sub.created_at) == (Mode.LIVE, "m-9", T0)
    assert (entry.actor, entry.new, entry.at, entry.allowed) == ("U-admin", "live", T0, True)
    assert (in_doubt.subscription_id, in_doubt.attempts, in_doubt.last_error) == (
        sub.id,
        2,
        "timeout",
    )
    assert (in_doubt.sending_at, in_doubt.platform_message_id) == (T0, None)

    async with db.begin() as conn:  # revision 2's column works, and the ids carry on
        await outbox.mark_sent(conn, in_doubt.id, platform_message_id="1617.0001", at=T0)
        assert (await tallies.append(conn, FINAL)).seq == 2
        [new_id] = await outbox.enqueue(conn, [delivery(sub.id, 2)])
        sub2, created = await subscriptions.subscribe(
            conn, DISCORD, "bessemer-2021", Mode.ALL, by="D", at=T0
        )
    assert new_id > in_doubt.id
    assert created
    assert sub2.id > sub.id
    async with db.connect() as conn:
        sent = await outbox.get(conn, in_doubt.id)
    assert sent is not None
    assert sent.platform_message_id == "1617.0001"
