"""Claimed deliveries on PostgreSQL, with two instances (two engines) on one store.

Each claims due work with ``FOR UPDATE SKIP LOCKED``; a channel's deliveries go out in order
whichever instance sends them; a live instance's claims are never taken; a dead one's are, once
they expire, and what may have gone out is first looked for in its channel, not sent blindly.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.delivery.worker import Dispatcher
from bot.domain.message import Message, Notice, Outgoing
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryAction, DeliveryStatus, NewDelivery
from bot.testing.adapter import Posted, RecordingAdapter
from bot.testing.clock import FakeClock
from tests.conftest import PG_URL, _pg_execute, _require_postgres
from tests.helpers import bessemer, tally

pytestmark = pytest.mark.postgres
CONSOLE = Platform("console")
T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


def channel(i: int) -> ChannelRef:
    return ChannelRef(CONSOLE, "local", f"c{i}")


@pytest.fixture
async def two() -> AsyncIterator[tuple[Database, Database]]:
    """Two instances' stores: two engines on one fresh PostgreSQL schema."""
    await _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    try:
        async with Database(PG_URL, schema=schema) as a, Database(PG_URL, schema=schema) as b:
            yield a, b
    finally:
        await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def item(i: int, n: int) -> NewDelivery:
    return NewDelivery(
        subscription_id=None,
        channel=channel(i),
        count_id="bessemer-2021",
        tally_seq=n,
        action=DeliveryAction.ALERT,
        significant=True,
        payload="{}",
        created_at=T0,
    )


async def test_a_channel_is_claimed_by_one_instance_at_a_time_and_in_order(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    async with a.begin() as conn:
        await outbox.enqueue(conn, [item(i, n) for n in range(3) for i in range(4)])
    async with a.begin() as conn_a:
        claimed_a = await outbox.claimable(conn_a, CONSOLE, now=T0, limit=2)
        # The heads of two channels, and what is queued behind them, 3 each.
        assert sorted({d.channel.channel for d in claimed_a}) == ["c0", "c1"]
        assert len(claimed_a) == 6
        async with b.begin() as conn_b:  # at the same time: the others, nothing of c0 or c1
            claimed_b = await outbox.claimable(conn_b, CONSOLE, now=T0, limit=100)
            assert sorted({d.channel.channel for d in claimed_b}) == ["c2", "c3"]
            await outbox.mark_sending(
                conn_b, [d.id for d in claimed_b], by="b", until=T0 + timedelta(seconds=30)
            )
        await outbox.mark_sending(
            conn_a, [d.id for d in claimed_a], by="a", until=T0 + timedelta(seconds=30)
        )
    async with a.begin() as conn:
        more = await outbox.enqueue(conn, [item(0, 9), item(5, 9)])
        # c0 is in flight: its new delivery waits behind; c5 is free.
        assert [d.id for d in await outbox.claimable(conn, CONSOLE, now=T0, limit=100)] == [more[1]]


async def test_a_live_claim_is_never_taken_and_an_expired_one_is_confirmed_first(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    async with a.begin() as conn:
        [first] = await outbox.enqueue(conn, [item(0, 1)])
        assert len(await outbox.claimable(conn, CONSOLE, now=T0, limit=9)) == 1
        await outbox.mark_sending(conn, [first], by="a", until=T0 + timedelta(seconds=30))
        assert await outbox.mark_attempt(conn, first, at=T0, by="a")
    async with b.begin() as conn:
        # b starting now: a's send is a's (alive), not b's to redo.
        assert await outbox.in_doubt(conn, CONSOLE, instance="b", now=T0) == []
        assert await outbox.release_expired(conn, CONSOLE, now=T0 + timedelta(seconds=29)) == 0
        assert not await outbox.mark_attempt(conn, first, at=T0, by="b")
        # a restarting under its own id takes its own back at once.
        assert [d.id for d in await outbox.in_doubt(conn, CONSOLE, instance="a", now=T0)] == [first]
        later = T0 + timedelta(seconds=31)
        assert [d.id for d in await outbox.in_doubt(conn, CONSOLE, instance="b", now=later)] == [
            first
        ]
        assert await outbox.release_expired(conn, CONSOLE, now=later) == 1
        back = await outbox.get(conn, first)
        assert back is not None
        assert (back.status, back.claimed_by, back.sending_at) == (DeliveryStatus.PENDING, None, T0)
        await outbox.claimable(conn, CONSOLE, now=later, limit=9)
        await outbox.mark_sending(conn, [first], by="b", until=later + timedelta(seconds=30))
    async with a.begin() as conn:  # a, back from a stall, may not send it any more
        assert not await outbox.mark_attempt(conn, first, at=T0, by="a")


async def test_two_dispatchers_deliver_every_message_once_in_order_and_take_over_a_dead_one(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    adapter = RecordingAdapter()  # the platform both instances post to
    channels = [channel(i) for i in range(30)]
    async with a.begin() as conn:
        await count_rows.upsert(conn, bessemer())
        for c in channels:
            await sub_rows.subscribe(conn, c, "bessemer-2021", Mode.EVENTS, by="t", at=T0)
    pipeline = Pipeline(a, clock)
    one = Dispatcher(a, {CONSOLE: adapter}, clock, instance="one", claim_seconds=30)
    other = Dispatcher(b, {CONSOLE: adapter}, clock, instance="other", claim_seconds=30)
    # Lead changes: every one significant, none coalesced.
    for yes, no in [(84, 201), (300, 210), (310, 420), (700, 430)]:
        await pipeline.ingest(tally(yes, no))
    while sum(await asyncio.gather(one.drain(CONSOLE), other.drain(CONSOLE))):
        pass
    for c in channels:
        heads = [m.headline for m in adapter.messages(c) if isinstance(m, Message)]
        assert len(heads) == 4, heads
        assert heads[0].startswith("First results")
        assert len({p.key for p in adapter.posted if p.channel == c}) == 4  # none twice
    # One instance dies mid-send: claimed, its request on its way, the answer never recorded.
    await pipeline.ingest(tally(710, 900))
    async with a.begin() as conn:
        due = await outbox.claimable(conn, CONSOLE, now=clock.now(), limit=100)
        until = clock.now() + timedelta(seconds=30)
        await outbox.mark_sending(conn, [d.id for d in due], by="dead", until=until, at=T0)
    reached = due[:10]  # these reached their channel before the process died
    for d in reached:
        adapter.posted.append(
            Posted(d.channel, f"x{d.id}", Message.from_json(d.payload), f"tb{d.id}")
        )
    assert await other.drain(CONSOLE) == 0  # alive as far as anyone knows: untouched
    clock.advance(31)
    while await other.drain(CONSOLE):
        pass
    for c in channels:
        assert len([p for p in adapter.posted if p.channel == c]) == 5
    assert adapter.reads == 30  # each channel looked at once, none sent blindly


async def test_a_takeover_sends_a_dead_instances_expired_claims_while_its_drain_goes_on(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    slow = channel(99)
    answer = asyncio.Event()

    hanging, ten = asyncio.Event(), asyncio.Event()

    class Hanging(RecordingAdapter):
        """A post to ``slow`` is answered only when the test says so."""

        async def post(self, channel: ChannelRef, content: Outgoing, **kw: Any) -> str:
            if channel == slow:
                hanging.set()
                await answer.wait()
            message_id = await super().post(channel, content, **kw)
            if len(self.posted) == 10:
                ten.set()
            return message_id

    adapter = Hanging()
    notice = Notice("results are in", "bessemer-2021").to_json()
    async with a.begin() as conn:
        dead = await outbox.enqueue(conn, [replace(item(i, 1), payload=notice) for i in range(10)])
        await outbox.claimable(conn, CONSOLE, now=T0, limit=100)
        until = T0 + timedelta(seconds=30)
        await outbox.mark_sending(conn, dead, by="dead", until=until, at=T0)
        await outbox.enqueue(conn, [replace(item(0, 2), channel=slow, payload=notice)])
    other = Dispatcher(b, {CONSOLE: adapter}, clock, instance="other", claim_seconds=30)
    assert await other.budgets[CONSOLE].leased()
    drain = asyncio.create_task(other.drain(CONSOLE))
    try:
        await asyncio.wait_for(hanging.wait(), timeout=10)
        assert adapter.posted == []
        clock.advance(20)
        await other.budgets[CONSOLE].lease.renew()  # as its renewal task does, and its claims
        async with b.begin() as conn:
            await outbox.renew(conn, "other", until=clock.now() + timedelta(seconds=30))
        clock.advance(11)  # the dead instance's claims expire while that post hangs
        other.wake({CONSOLE})
        await asyncio.wait_for(ten.wait(), timeout=10)
        assert not drain.done()
        assert {p.channel for p in adapter.posted} == {channel(i) for i in range(10)}
        assert adapter.reads == 10  # each looked for first: it may have gone out
    finally:
        answer.set()
        await drain
    assert [p.channel for p in adapter.posted][-1] == slow
