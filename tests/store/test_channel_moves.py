"""A channel that got a new id (``bot.store.channel_moves``) on SQLite and PostgreSQL: its
subscriptions and open deliveries move, a count the new channel already has is merged into it,
finished deliveries stay where they were, one audit entry says so, and moving again moves
nothing."""

from __future__ import annotations

from dataclasses import replace

from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.store import Database, audit, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.channel_moves import move_channel
from bot.store.outbox import DeliveryAction, DeliveryStatus, NewDelivery
from tests.helpers import bessemer
from tests.test_store import T0

TG = Platform("telegram")
OLD = ChannelRef(TG, "-700000001", "-700000001")
NEW = ChannelRef(TG, "-1001500000001", "-1001500000001")


def post(sub_id: int, channel: ChannelRef, count_id: str) -> NewDelivery:
    return NewDelivery(
        subscription_id=sub_id,
        channel=channel,
        count_id=count_id,
        tally_seq=1,
        action=DeliveryAction.POST,
        significant=True,
        payload="{}",
        created_at=T0,
    )


async def test_a_moved_channel_takes_its_subscriptions_and_deliveries(db: Database) -> None:
    async with db.begin() as conn:
        await count_rows.upsert(conn, bessemer())
        await count_rows.upsert(conn, replace(bessemer(), id="other-2021"))
        a, _ = await sub_rows.subscribe(conn, OLD, "bessemer-2021", Mode.EVENTS, by="t", at=T0)
        b, _ = await sub_rows.subscribe(conn, OLD, "other-2021", Mode.EVENTS, by="t", at=T0)
        there, _ = await sub_rows.subscribe(conn, NEW, "other-2021", Mode.ALL, by="t", at=T0)
        await sub_rows.set_live_message(conn, a.id, "17")
        done, open_a, open_b = await outbox.enqueue(
            conn, [post(a.id, OLD, "bessemer-2021"), post(a.id, OLD, "bessemer-2021"),
                   post(b.id, OLD, "other-2021")]
        )  # fmt: skip
        await outbox.mark_sent(conn, done, platform_message_id="17", at=T0)
        assert await move_channel(conn, OLD, NEW, at=T0, why="became a supergroup") == 1
        assert await move_channel(conn, OLD, NEW, at=T0, why="told again") == 0
        assert await sub_rows.for_channel(conn, OLD) == []
        subs = {s.count_id: s for s in await sub_rows.for_channel(conn, NEW)}
        assert subs["bessemer-2021"].id == a.id
        assert subs["bessemer-2021"].live_message_id is None  # a new scoreboard there
        assert subs["other-2021"].wants == there.wants  # the new channel's own, merged
        moved_a, moved_b, sent = (
            await outbox.get(conn, open_a), await outbox.get(conn, open_b),
            await outbox.get(conn, done),
        )  # fmt: skip
        entries = await audit.recent(conn)
    assert moved_a is not None and moved_b is not None and sent is not None  # noqa: PT018
    assert (moved_a.channel, moved_b.channel, sent.channel) == (NEW, NEW, OLD)
    assert moved_b.subscription_id == there.id
    assert sent.status is DeliveryStatus.SENT
    (entry,) = [e for e in entries if e.action == "move channel"]
    assert (entry.old, entry.new, entry.actor) == (str(OLD), str(NEW), "telegram:platform")
