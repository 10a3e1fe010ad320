"""The outbox's moves for many deliveries at once (a fan-out to thousands of followers): claims
by kind and weight, attempts noted and messages recorded in one statement each; and a follower
whose place no longer sees the count gets nothing already queued. On SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.domain.subscription import ChannelRef, Hear, Platform, Wants
from bot.errors import StoreError
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus, NewDelivery
from tests.helpers import bessemer

CONSOLE = Platform("console")
T0 = datetime(2021, 4, 9, tzinfo=UTC)


def queued(channel: str, action: DeliveryAction, *, significant: bool) -> NewDelivery:
    return NewDelivery(
        None, ChannelRef(CONSOLE, "local", channel), "bessemer-2021", 1, action, significant,
        "{}", T0,
    )  # fmt: skip


async def test_channels_then_direct_messages_each_calls_and_finals_first(db: Database) -> None:
    """Routine DMs queued first, then finals to DMs, then a routine channel post, then a
    channel's call: the channel's call, the channel's post, the DMs' finals, the routine DMs;
    and no more people than ``direct``."""
    dm, post = DeliveryAction.DIRECT, DeliveryAction.POST
    async with db.begin() as conn:
        ids = await outbox.enqueue(
            conn,
            [
                queued("dm1", dm, significant=False),
                queued("dm2", dm, significant=False),
                queued("dm3", dm, significant=True),
                queued("dm4", dm, significant=True),
                queued("c1", post, significant=False),
                queued("c2", post, significant=True),
            ],
        )
        got = await outbox.claimable(conn, CONSOLE, now=T0, limit=5, direct=3)
        order = [d.id for d in got]
        assert sorted(order) == order  # handed back oldest first
        assert set(order) == {ids[5], ids[4], ids[2], ids[3], ids[0]}
        channels_first = await outbox.claimable(conn, CONSOLE, now=T0, limit=1)
        assert [d.id for d in channels_first] == [ids[5]]  # a call before a routine post
        dms_calls_first = await outbox.claimable(conn, CONSOLE, now=T0, limit=3, direct=1)
        assert [d.id for d in dms_calls_first] == [ids[2], ids[4], ids[5]]
        assert await outbox.claimable(conn, CONSOLE, now=T0, limit=9, direct=0) == [
            d for d in got if d.action is post
        ]


async def test_attempts_noted_and_messages_recorded_together(db: Database) -> None:
    async with db.begin() as conn:
        a, b, c, gone = await outbox.enqueue(
            conn, [queued(f"dm{i}", DeliveryAction.DIRECT, significant=True) for i in range(4)]
        )
        await outbox.mark_sending(conn, [a, b, c, gone], by="me")
        await outbox.mark_sending(conn, [], by="me")
        assert await outbox.mark_attempts(conn, [a, b, c], at=T0, by="other") == set()
        assert await outbox.mark_attempts(conn, [a, b, c], at=T0, by="me") == {a, b, c}
        await outbox.mark_sent(conn, gone, platform_message_id="m0", at=T0)
        failed = await outbox.mark_sent_many(conn, {a: "m1", b: None, gone: "m2"}, at=T0)
        assert list(failed) == [gone]
        assert isinstance(failed[gone], StoreError)
        assert "already sent" in str(failed[gone])
        with pytest.raises(StoreError, match="no delivery 999999"):
            await outbox.mark_sent(conn, 999999, platform_message_id=None, at=T0)
    async with db.connect() as conn:
        rows = [await outbox.get(conn, i) for i in (a, b, c)]
    assert [(r.status, r.platform_message_id) for r in rows if r is not None] == [
        (DeliveryStatus.SENT, "m1"),
        (DeliveryStatus.SENT, None),
        (DeliveryStatus.SENDING, None),
    ]
    assert all(r is not None and r.sending_at == T0 for r in rows)


async def test_a_dm_queued_before_its_count_was_made_private_is_dropped_unsent(
    db: Database,
) -> None:
    """Server A's public count, followed from A and from B, its final queued to both; A makes
    it private: B's follower's DM is cancelled when claimed (and when about to go), A's goes;
    ``recipients`` no longer names B's follower."""
    owner = ChannelRef(Platform("discord"), "A", "results")
    elsewhere = ChannelRef(Platform("discord"), "B", "lounge")
    count = replace(bessemer(), owner="discord:A", public=True)
    final = Wants(frozenset({Hear.FINAL}))
    async with db.begin() as conn:
        await count_rows.upsert(conn, count)
        mine, _ = await follow_rows.follow(conn, owner, "1", count.id, final, inbox="d1", at=T0)
        theirs, _ = await follow_rows.follow(
            conn, elsewhere, "2", count.id, final, inbox="d2", at=T0
        )
        assert len(await follow_rows.recipients(conn, count.id)) == 2
        queued_ = [
            follow_rows.delivery(
                f.recipient, DeliveryAction.POST, tally_seq=1, significant=True, payload="{}",
                at=T0,
            )
            for f in (mine, theirs)
        ]  # fmt: skip
        a, b = await outbox.enqueue(conn, queued_)
        await outbox.mark_sending(conn, [a], by="me")
        await count_rows.upsert(conn, replace(count, public=False))
        assert [r.id for r in await follow_rows.recipients(conn, count.id)] == [mine.id]
        assert await outbox.cancel_orphans(conn, [a, b]) == {b}
        assert await outbox.mark_attempts(conn, [a], at=T0, by="me") == {a}
    async with db.connect() as conn:
        dropped = await outbox.get(conn, b)
    assert dropped is not None
    assert dropped.status is DeliveryStatus.CANCELLED
