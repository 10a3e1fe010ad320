"""The store against SQLite (a real file) and PostgreSQL (a fresh schema per test).

Real data: the Bessemer 2021 union election (Amazon BHM1), 5,876 eligible, 3,215 ballots
received, counted overnight to Yes 738, No 1,798, with 505 challenged and 76 void.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, text, update
from sqlalchemy import exc as sa_exc

from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.errors import ConfigError, StoreError
from bot.store import Database, audit, counts, migrations, outbox, subscriptions, tallies
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, DeliveryStatus, NewDelivery
from bot.store.schema import metadata
from bot.store.schema import subscriptions as subscriptions_table

T0 = datetime(2021, 4, 8, 22, 0, tzinfo=UTC)
CDT = timezone(timedelta(hours=-5), "CDT")
"""Bessemer, Alabama, in April."""

BESSEMER = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
    eligible=5876,
    received=3215,
)
SUPERMAJORITY = Count(
    "bylaws-2024",
    "Bylaws amendment",
    (Choice("for", "For"), Choice("against", "Against")),
    DecisionRule(RuleKind.THRESHOLD, threshold=Fraction(2, 3)),
)
SLACK = ChannelRef(Platform("slack"), "T024BE7LD", "C01RWDSU")
DISCORD = ChannelRef(Platform("discord"), "81384788765712384", "381870553235193857")


def bessemer_tally(yes: int, no: int, minutes: int = 0, **kw: Any) -> Tally:
    return Tally(
        "bessemer-2021", {"yes": yes, "no": no}, T0 + timedelta(minutes=minutes), "nlrb", **kw
    )


FINAL = bessemer_tally(738, 1798, 600, void=76, challenged=505, state=TallyState.FINAL)


def delivery(
    sub_id: int | None,
    seq: int,
    *,
    channel: ChannelRef = SLACK,
    minutes: int = 0,
    action: DeliveryAction = DeliveryAction.POST,
) -> NewDelivery:
    return NewDelivery(
        subscription_id=sub_id,
        channel=channel,
        count_id="bessemer-2021",
        tally_seq=seq,
        action=action,
        significant=action is not DeliveryAction.EDIT_LIVE,
        payload=json.dumps({"text": f"update {seq}"}),
        created_at=T0 + timedelta(minutes=minutes),
    )


async def seed(db: Database, *extra: Count) -> None:
    async with db.begin() as conn:
        for count in (BESSEMER, *extra):
            await counts.upsert(conn, count)


async def subscribe(db: Database, channel: ChannelRef = SLACK, mode: Mode = Mode.ALL) -> int:
    async with db.begin() as conn:
        sub, _ = await subscriptions.subscribe(
            conn, channel, "bessemer-2021", mode, by="U-admin", at=T0
        )
    return sub.id


# --- counts ---------------------------------------------------------------------------------


async def test_counts_round_trip_and_upsert_overwrites(db: Database) -> None:
    await seed(db, SUPERMAJORITY)
    async with db.connect() as conn:
        assert await counts.get(conn, "bessemer-2021") == BESSEMER
        assert await counts.get(conn, "bylaws-2024") == SUPERMAJORITY
        assert await counts.get(conn, "nope") is None
        assert await counts.all_counts(conn) == [BESSEMER, SUPERMAJORITY]
    renamed = Count(
        BESSEMER.id, "BHM1 (rerun)", BESSEMER.choices, BESSEMER.rule, eligible=6000, received=None
    )
    async with db.begin() as conn:
        await counts.upsert(conn, renamed)
    async with db.connect() as conn:
        assert await counts.get(conn, "bessemer-2021") == renamed
        assert len(await counts.all_counts(conn)) == 2


async def test_count_status_and_received_change_in_place(db: Database) -> None:
    await seed(db)
    async with db.begin() as conn:
        await counts.set_state(conn, "bessemer-2021", CountStatus.COUNTING, 3217)
    async with db.connect() as conn:
        got = await counts.get(conn, "bessemer-2021")
    assert got is not None
    assert (got.status, got.received, got.eligible) == (CountStatus.COUNTING, 3217, 5876)
    async with db.begin() as conn:
        await counts.set_state(conn, "bessemer-2021", CountStatus.PAUSED, None)
        with pytest.raises(StoreError, match="'nope'"):
            await counts.set_state(conn, "nope", CountStatus.FINAL, None)
        with pytest.raises(ValueError, match="negative"):
            await counts.set_state(conn, "bessemer-2021", CountStatus.FINAL, -1)
    async with db.connect() as conn:
        got = await counts.get(conn, "bessemer-2021")
    assert got is not None
    assert (got.status, got.received) == (CountStatus.PAUSED, None)


# --- tallies --------------------------------------------------------------------------------


async def test_append_assigns_seq_per_count_and_last_returns_the_latest(db: Database) -> None:
    await seed(db, SUPERMAJORITY)
    other = Tally("bylaws-2024", {"for": 10, "against": 3}, T0, "manual", seq=99)
    async with db.begin() as conn:
        assert await tallies.last(conn, "bessemer-2021") is None
        first = await tallies.append(conn, bessemer_tally(0, 0, seq=42))
        assert (await tallies.append(conn, other)).seq == 1
        second = await tallies.append(conn, bessemer_tally(463, 1100, 120))
        third = await tallies.append(conn, FINAL)
    assert (first.seq, second.seq, third.seq) == (1, 2, 3)
    assert third == FINAL.with_seq(3)
    async with db.connect() as conn:
        assert await tallies.last(conn, "bessemer-2021") == FINAL.with_seq(3)
        assert await tallies.last(conn, "bylaws-2024") == other.with_seq(1)


async def test_history_is_oldest_first_and_keeps_the_latest_limit(db: Database) -> None:
    await seed(db)
    async with db.begin() as conn:
        for i in range(1, 8):
            await tallies.append(conn, bessemer_tally(100 * i, 200 * i, i))
    async with db.connect() as conn:
        everything = await tallies.history(conn, "bessemer-2021")
        latest3 = await tallies.history(conn, "bessemer-2021", limit=3)
        assert await tallies.history(conn, "bylaws-2024") == []
        with pytest.raises(ValueError, match="limit"):
            await tallies.history(conn, "bessemer-2021", limit=0)
    assert [t.seq for t in everything] == [1, 2, 3, 4, 5, 6, 7]
    assert [t.seq for t in latest3] == [5, 6, 7]
    assert latest3[0] == bessemer_tally(500, 1000, 5).with_seq(5)


async def test_append_to_an_unknown_count_is_a_store_error(db: Database) -> None:
    with pytest.raises(StoreError, match="not in the store"):
        async with db.begin() as conn:
            await tallies.append(conn, Tally("nope", {"a": 1}, T0, "x"))


async def test_rejected_tallies_are_kept_whole_newest_first(db: Database) -> None:
    await seed(db)
    lower = bessemer_tally(400, 1100, 130)
    typo = bessemer_tally(4630, 1100, 131, challenged=505)
    stray = Tally("not-configured", {"x": 1}, T0, "feed")
    async with db.begin() as conn:
        first = await tallies.reject(
            conn, lower, reason="decreased", detail="yes went 463 -> 400", at=T0
        )
        second = await tallies.reject(
            conn, typo, reason="exceeds-received", detail="5,735 > 3,215", at=T0
        )
        await tallies.reject(conn, stray, reason="unknown-count", detail="", at=T0)
    assert second > first
    async with db.connect() as conn:
        got = await tallies.rejected(conn, "bessemer-2021")
        only_latest = await tallies.rejected(conn, "bessemer-2021", limit=1)
        strays = await tallies.rejected(conn, "not-configured")
        assert await tallies.last(conn, "bessemer-2021") is None
    assert [(r.id, r.reason, r.tally) for r in got] == [
        (second, "exceeds-received", typo),
        (first, "decreased", lower),
    ]
    assert got[1].detail == "yes went 463 -> 400"
    assert got[1].count_id == "bessemer-2021"
    assert got[1].at == T0
    assert [r.id for r in only_latest] == [second]
    assert [r.tally for r in strays] == [stray]


# --- timestamps -----------------------------------------------------------------------------


async def test_timestamps_come_back_aware_utc_and_equal(db: Database) -> None:
    await seed(db)
    local = datetime(2021, 4, 8, 21, 45, 7, 123456, tzinfo=CDT)
    async with db.begin() as conn:
        await tallies.append(conn, Tally("bessemer-2021", {"yes": 463, "no": 1100}, local, "n"))
        sub, _ = await subscriptions.subscribe(
            conn, SLACK, "bessemer-2021", Mode.LIVE, by="U1", at=local
        )
        await audit.record(conn, AuditEntry(local, "U1", "subscribe", "bessemer-2021"))
        [delivery_id] = await outbox.enqueue(conn, [delivery(sub.id, 1)])
        await outbox.mark_sending(conn, [delivery_id], at=local)
    async with db.connect() as conn:
        last = await tallies.last(conn, "bessemer-2021")
        got_sub = await subscriptions.get(conn, sub.id)
        [entry] = await audit.recent(conn)
        got = await outbox.get(conn, delivery_id)
    assert last is not None
    assert got_sub is not None
    assert got is not None
    stamps = [last.observed_at, got_sub.created_at, entry.at, got.sending_at]
    for stamp in stamps:
        assert stamp == local
        assert stamp is not None
        assert stamp.tzinfo is not None
        assert stamp.utcoffset() == timedelta(0)
        assert stamp == datetime(2021, 4, 9, 2, 45, 7, 123456, tzinfo=UTC)
    assert got.created_at == T0
    assert got.created_at.tzinfo is not None


async def test_naive_datetimes_are_refused(db: Database) -> None:
    await seed(db)
    with pytest.raises(sa_exc.StatementError, match="timezone-aware"):
        async with db.begin() as conn:
            await tallies.append(
                conn, Tally("bessemer-2021", {"yes": 1, "no": 0}, datetime(2021, 4, 8), "x")
            )


# --- subscriptions --------------------------------------------------------------------------


async def test_subscribe_twice_updates_the_mode_and_returns_created_false(db: Database) -> None:
    await seed(db)
    later = T0 + timedelta(hours=1)
    async with db.begin() as conn:
        sub, created = await subscriptions.subscribe(
            conn, SLACK, "bessemer-2021", Mode.EVENTS, by="U-first", at=T0
        )
        assert created is True
        await subscriptions.set_live_message(conn, sub.id, "1617919200.000100")
        await subscriptions.disable(conn, sub.id, "channel_not_found")
        again, created_again = await subscriptions.subscribe(
            conn, SLACK, "bessemer-2021", Mode.LIVE, by="U-second", at=later
        )
    assert created_again is False
    assert again.id == sub.id
    assert (again.mode, again.enabled, again.disabled_reason) == (Mode.LIVE, True, None)
    assert (again.created_by, again.created_at) == ("U-first", T0)
    assert again.live_message_id == "1617919200.000100"
    assert again.channel == SLACK
    async with db.connect() as conn:
        assert await subscriptions.for_channel(conn, SLACK) == [again]


async def test_subscription_queries_and_changes(db: Database) -> None:
    await seed(db, SUPERMAJORITY)
    elsewhere = ChannelRef(Platform("slack"), "T024BE7LD", "C02OTHER")
    async with db.begin() as conn:
        a, _ = await subscriptions.subscribe(conn, SLACK, "bessemer-2021", Mode.ALL, by="U", at=T0)
        b, _ = await subscriptions.subscribe(
            conn, DISCORD, "bessemer-2021", Mode.EVENTS, by="D", at=T0
        )
        c, _ = await subscriptions.subscribe(conn, SLACK, "bylaws-2024", Mode.LIVE, by="U", at=T0)
        d, _ = await subscriptions.subscribe(
            conn, elsewhere, "bessemer-2021", Mode.ALL, by="U", at=T0
        )
        await subscriptions.disable(conn, b.id, "missing permissions")
        await subscriptions.set_live_message(conn, c.id, "m-1")
        await subscriptions.set_live_message(conn, a.id, None)
        with pytest.raises(StoreError, match="subscription 999999"):
            await subscriptions.disable(conn, 999999, "x")
        with pytest.raises(StoreError, match="subscription 999999"):
            await subscriptions.set_live_message(conn, 999999, "x")
    async with db.connect() as conn:
        assert [s.id for s in await subscriptions.for_count(conn, "bessemer-2021")] == [a.id, d.id]
        everyone = await subscriptions.for_count(conn, "bessemer-2021", enabled_only=False)
        assert [s.id for s in everyone] == [a.id, b.id, d.id]
        assert [s.id for s in await subscriptions.for_channel(conn, SLACK)] == [a.id, c.id]
        disabled = await subscriptions.get(conn, b.id)
        assert disabled is not None
        assert (disabled.enabled, disabled.disabled_reason) == (False, "missing permissions")
        live = await subscriptions.get(conn, c.id)
        assert live is not None
        assert live.live_message_id == "m-1"
        assert live.mode is Mode.LIVE
        assert live.count_id == "bylaws-2024"
        assert await subscriptions.get(conn, 999999) is None


async def test_unsubscribe_removes_it_and_cancels_its_open_deliveries(db: Database) -> None:
    await seed(db)
    sub_id = await subscribe(db, SLACK)
    other_id = await subscribe(db, DISCORD)
    async with db.begin() as conn:
        pending, sending, others = await outbox.enqueue(
            conn, [delivery(sub_id, 1), delivery(sub_id, 2), delivery(other_id, 1, channel=DISCORD)]
        )
        await outbox.mark_sending(conn, [sending], at=T0)
        assert await subscriptions.unsubscribe(conn, SLACK, "bessemer-2021") is True
        assert await subscriptions.unsubscribe(conn, SLACK, "bessemer-2021") is False
    async with db.connect() as conn:
        assert await subscriptions.get(conn, sub_id) is None
        assert await subscriptions.for_channel(conn, SLACK) == []
        statuses = [await outbox.get(conn, i) for i in (pending, sending, others)]
    assert [d.status if d else None for d in statuses] == [
        DeliveryStatus.CANCELLED,
        DeliveryStatus.CANCELLED,  # claimed, not yet sent: dropped when its turn comes
        DeliveryStatus.PENDING,
    ]


async def test_a_cancelled_delivery_never_starts_and_a_late_answer_still_counts(
    db: Database,
) -> None:
    await seed(db)
    sub_id = await subscribe(db, SLACK)
    other_id = await subscribe(db, DISCORD)
    async with db.begin() as conn:
        waiting, on_its_way, disabled, kept = await outbox.enqueue(
            conn,
            [
                delivery(sub_id, 1),
                delivery(sub_id, 2),
                delivery(other_id, 1, channel=DISCORD),
                delivery(None, 1, channel=DISCORD),  # an alert: no subscription
            ],
        )
        await outbox.mark_sending(conn, [waiting, on_its_way, disabled, kept])
        assert await outbox.mark_attempt(conn, on_its_way, at=T0)  # its request goes out
        assert await subscriptions.unsubscribe(conn, SLACK, "bessemer-2021")
        # The one waiting for its turn is told not to go; the other arrives and is recorded.
        assert not await outbox.mark_attempt(conn, waiting, at=T0)
        await outbox.mark_sent(conn, on_its_way, platform_message_id="m1", at=T0)
        assert not await outbox.mark_retry(conn, waiting, error="x", next_attempt_at=T0)
        assert not await outbox.mark_dead(conn, waiting, error="x")
        # A subscription disabled behind the outbox's back (no cancel): caught at the attempt.
        await conn.execute(
            update(subscriptions_table)
            .where(subscriptions_table.c.id == other_id)
            .values(enabled=False)
        )
        assert not await outbox.mark_attempt(conn, disabled, at=T0)
        assert await outbox.mark_attempt(conn, kept, at=T0)
        assert await outbox.mark_attempt(conn, kept, at=T0 + timedelta(minutes=5))
    async with db.connect() as conn:
        got = {i: await outbox.get(conn, i) for i in (waiting, on_its_way, disabled, kept)}
    assert {i: d.status if d else None for i, d in got.items()} == {
        waiting: DeliveryStatus.CANCELLED,
        on_its_way: DeliveryStatus.SENT,
        disabled: DeliveryStatus.CANCELLED,
        kept: DeliveryStatus.SENDING,
    }
    assert got[kept] is not None
    assert got[kept].sending_at == T0  # the first attempt's time is kept


async def test_orphans_are_cancelled_and_a_429_is_not_an_attempt(db: Database) -> None:
    await seed(db)
    sub_id = await subscribe(db, SLACK)
    gone_id = await subscribe(db, DISCORD)  # its channel was deleted
    async with db.begin() as conn:
        queued, claimed = await outbox.enqueue(
            conn, [delivery(gone_id, 1, channel=DISCORD), delivery(gone_id, 2, channel=DISCORD)]
        )
        await outbox.mark_sending(conn, [claimed])
        await subscriptions.disable(conn, gone_id, "the channel was deleted")
        assert not await outbox.mark_attempt(conn, claimed, at=T0)
    async with db.connect() as conn:
        gone = [await outbox.get(conn, i) for i in (queued, claimed)]
    assert [d.status if d else None for d in gone] == [DeliveryStatus.CANCELLED] * 2
    async with db.begin() as conn:
        orphan, alert = await outbox.enqueue(conn, [delivery(sub_id, 1), delivery(None, 1)])
        await conn.execute(delete(subscriptions_table).where(subscriptions_table.c.id == sub_id))
        assert await outbox.cancel_orphans(conn, [orphan, alert]) == {orphan}
        await outbox.mark_sending(conn, [alert])
        await outbox.mark_retry(conn, alert, error="429", next_attempt_at=T0, counted=False)
        await outbox.mark_sending(conn, [alert])
        await outbox.mark_retry(conn, alert, error="503", next_attempt_at=T0)
    async with db.connect() as conn:
        got = await outbox.get(conn, alert)
    assert got is not None
    assert got.attempts == 1


async def test_subscribing_to_an_unknown_count_fails_on_its_foreign_key(db: Database) -> None:
    with pytest.raises(StoreError, match=r"(?i)foreign key") as caught:
        async with db.begin() as conn:
            await subscriptions.subscribe(conn, SLACK, "no-such-count", Mode.ALL, by="U", at=T0)
    assert isinstance(caught.value.__cause__, sa_exc.IntegrityError)


# --- audit ----------------------------------------------------------------------------------


async def test_audit_records_and_lists_newest_first(db: Database) -> None:
    entries = [
        AuditEntry(T0, "U-admin", "set-received", "bessemer-2021", "3215", "3217", True, "recount"),
        AuditEntry(
            T0 + timedelta(minutes=1),
            "U-stranger",
            "set-status",
            "bessemer-2021",
            "counting",
            "final",
            allowed=False,
            detail="not an admin",
        ),
        AuditEntry(T0 + timedelta(minutes=2), "U-admin", "reload-config"),
    ]
    async with db.begin() as conn:
        ids = [await audit.record(conn, e) for e in entries]
    assert ids == sorted(ids)
    assert len(set(ids)) == 3
    async with db.connect() as conn:
        everything = await audit.recent(conn)
        bessemer = await audit.recent(conn, count_id="bessemer-2021")
        latest = await audit.recent(conn, limit=1)
    stored = [replace(e, id=i) for e, i in zip(entries, ids, strict=True)]
    assert everything == stored[::-1]
    assert bessemer == [stored[1], stored[0]]
    assert bessemer[0].allowed is False
    assert bessemer[1].allowed is True
    assert latest == [stored[2]]
    assert stored[2].count_id is None
    assert stored[2].old is None
    assert stored[2].detail == ""


# --- outbox ---------------------------------------------------------------------------------


async def test_outbox_walks_a_delivery_through_its_states(db: Database) -> None:
    await seed(db)
    sub_id = await subscribe(db, SLACK)
    discord_id = await subscribe(db, DISCORD)
    async with db.begin() as conn:
        ids = await outbox.enqueue(
            conn,
            [
                delivery(sub_id, 1, minutes=0),
                delivery(sub_id, 2, minutes=5, action=DeliveryAction.EDIT_LIVE),
                delivery(discord_id, 2, channel=DISCORD, minutes=5),
                delivery(sub_id, 3, minutes=10, action=DeliveryAction.ALERT),
            ],
        )
    first, edit, on_discord, alert = ids
    assert ids == sorted(ids)
    async with db.connect() as conn:
        assert await outbox.depth(conn, Platform("slack")) == 3
        assert await outbox.depth(conn, Platform("discord")) == 1
        due_now = await outbox.due(conn, Platform("slack"), now=T0 + timedelta(minutes=5), limit=10)
        assert [d.id for d in due_now] == [first, edit]
        assert [d.id for d in await outbox.due(conn, Platform("slack"), now=T0, limit=10)] == [
            first
        ]
        capped = await outbox.due(conn, Platform("slack"), now=T0 + timedelta(hours=1), limit=2)
        assert [d.id for d in capped] == [first, edit]
        got = await outbox.get(conn, first)
    assert got is not None
    assert (got.subscription_id, got.channel, got.count_id, got.tally_seq) == (
        sub_id,
        SLACK,
        "bessemer-2021",
        1,
    )
    assert (got.action, got.significant, got.payload) == (
        DeliveryAction.POST,
        True,
        '{"text": "update 1"}',
    )
    assert (got.status, got.attempts, got.next_attempt_at, got.created_at) == (
        DeliveryStatus.PENDING,
        0,
        T0,
        T0,
    )
    assert (got.sent_at, got.platform_message_id, got.last_error, got.sending_at) == (None,) * 4

    at = T0 + timedelta(minutes=6)
    async with db.begin() as conn:
        assert await outbox.mark_sending(conn, [first, edit, alert], at=at) == 3
        assert await outbox.mark_sending(conn, [first], at=at) == 0  # already claimed
        assert await outbox.supersede(conn, [edit, on_discord]) == 1  # edit is on its way
    async with db.connect() as conn:
        assert [d.id for d in await outbox.in_doubt(conn, Platform("slack"))] == [
            first,
            edit,
            alert,
        ]
        assert await outbox.in_doubt(conn, Platform("discord")) == []
        assert await outbox.due(conn, Platform("slack"), now=at, limit=10) == []
        assert await outbox.depth(conn, Platform("slack")) == 3
        assert await outbox.depth(conn, Platform("discord")) == 0

    retry_at = at + timedelta(seconds=30)
    async with db.begin() as conn:
        await outbox.mark_sent(conn, first, platform_message_id="1617919200.000100", at=at)
        await outbox.mark_retry(conn, edit, error="429 rate limited", next_attempt_at=retry_at)
        await outbox.mark_dead(conn, alert, error="channel_not_found")
    async with db.connect() as conn:
        sent, retried, dead = [await outbox.get(conn, i) for i in (first, edit, alert)]
        assert await outbox.due(conn, Platform("slack"), now=at, limit=10) == []
        later = await outbox.due(conn, Platform("slack"), now=retry_at, limit=10)
        assert await outbox.dead(conn) == [dead]
        assert await outbox.depth(conn, Platform("slack")) == 1
    assert sent is not None
    assert retried is not None
    assert dead is not None
    assert (sent.status, sent.platform_message_id, sent.sent_at) == (
        DeliveryStatus.SENT,
        "1617919200.000100",
        at,
    )
    assert (retried.status, retried.attempts, retried.last_error, retried.next_attempt_at) == (
        DeliveryStatus.PENDING,
        1,
        "429 rate limited",
        retry_at,
    )
    assert [d.id for d in later] == [edit]
    assert (dead.status, dead.attempts, dead.last_error) == (
        DeliveryStatus.DEAD,
        1,
        "channel_not_found",
    )

    async with db.begin() as conn:
        await outbox.mark_dead(conn, edit, error="gave up")  # from PENDING: no attempt in flight
        for finished in (first, alert, on_discord):
            with pytest.raises(StoreError, match=f"delivery {finished} is already"):
                await outbox.mark_retry(conn, finished, error="x", next_attempt_at=retry_at)
        with pytest.raises(StoreError, match="no delivery 999999"):
            await outbox.mark_sent(conn, 999999, platform_message_id=None, at=at)
    async with db.connect() as conn:
        assert [d.id for d in await outbox.dead(conn)] == [alert, edit]
        assert [d.id for d in await outbox.dead(conn, limit=1)] == [alert]
        gave_up = await outbox.get(conn, edit)
        assert gave_up is not None
        assert gave_up.attempts == 1
        assert await outbox.get(conn, 999999) is None
        assert await outbox.enqueue(conn, []) == []


async def test_release_next_due_and_alerts_without_a_subscription(db: Database) -> None:
    admin = ChannelRef(Platform("discord"), "81384788765712384", "admin-alerts")
    alert = replace(delivery(0, 5, channel=admin, minutes=3), subscription_id=None)
    alert = replace(alert, action=DeliveryAction.ALERT, count_id="")
    async with db.begin() as conn:
        assert await outbox.next_due(conn, Platform("discord")) is None
        first, second, third = await outbox.enqueue(
            conn, [alert, replace(alert, created_at=T0), replace(alert, created_at=T0)]
        )
        assert await outbox.next_due(conn, Platform("discord")) == T0
        assert await outbox.next_due(conn, Platform("slack")) is None
        assert await outbox.mark_sending(conn, [first, second, third], at=T0) == 3
        assert await outbox.next_due(conn, Platform("discord")) is None
        await outbox.mark_retry(conn, third, error="502", next_attempt_at=T0 + timedelta(hours=1))
        assert await outbox.release(conn, [first, second, third, 999999]) == 2
        assert await outbox.release(conn, []) == 0
    async with db.connect() as conn:
        due = await outbox.due(conn, Platform("discord"), now=T0 + timedelta(minutes=3), limit=10)
        next_at = await outbox.next_due(conn, Platform("discord"))
        assert await outbox.in_doubt(conn, Platform("discord")) == []
    assert next_at == T0
    assert next_at.tzinfo is not None
    # release keeps sending_at: a send that had started may have gone through
    assert [(d.id, d.attempts, d.sending_at) for d in due] == [(first, 0, T0), (second, 0, T0)]
    assert due[0] == replace(due[0], subscription_id=None, channel=admin, count_id="")
    assert (due[0].action, due[0].created_at) == (DeliveryAction.ALERT, T0 + timedelta(minutes=3))


@pytest.mark.parametrize("n", [3, 1234])
async def test_enqueue_returns_ids_in_item_order(db: Database, n: int) -> None:
    await seed(db)
    sub_id = await subscribe(db)
    channels = [SLACK if i % 3 else DISCORD for i in range(n)]
    items = [delivery(sub_id, i, channel=channels[i]) for i in range(n)]
    async with db.begin() as conn:
        ids = await outbox.enqueue(conn, items)
        more = await outbox.enqueue(conn, items[:2])
    assert len(ids) == len(set(ids)) == n
    assert min(more) > max(ids)
    async with db.connect() as conn:
        stored = [
            *await outbox.due(conn, Platform("slack"), now=T0, limit=n),
            *await outbox.due(conn, Platform("discord"), now=T0, limit=n),
        ]
    by_id = {d.id: (d.tally_seq, d.channel) for d in stored}
    assert [by_id[i] for i in ids] == [(i, channels[i]) for i in range(n)]


# --- transactions ---------------------------------------------------------------------------


class Boom(Exception):
    pass


async def test_a_failed_transaction_rolls_back_the_tally_and_the_outbox(db: Database) -> None:
    await seed(db)
    sub_id = await subscribe(db)

    async def accept_and_queue_then_fail() -> None:
        async with db.begin() as conn:
            accepted = await tallies.append(conn, bessemer_tally(463, 1100))
            await outbox.enqueue(conn, [delivery(sub_id, accepted.seq)])
            assert await outbox.depth(conn, Platform("slack")) == 1  # visible inside
            raise Boom

    with pytest.raises(Boom):
        await accept_and_queue_then_fail()
    async with db.connect() as conn:
        assert await tallies.last(conn, "bessemer-2021") is None
        assert await outbox.depth(conn, Platform("slack")) == 0
    async with db.begin() as conn:  # and the seq is not used up
        assert (await tallies.append(conn, bessemer_tally(463, 1100))).seq == 1


async def test_connect_commits_nothing(db: Database) -> None:
    async with db.connect() as conn:
        await counts.upsert(conn, BESSEMER)
        assert await counts.get(conn, "bessemer-2021") == BESSEMER
    async with db.connect() as conn:
        assert await counts.all_counts(conn) == []


async def test_connect_reads_one_snapshot(db: Database) -> None:
    await seed(db)

    async def recount() -> None:
        async with db.begin() as conn:
            await counts.set_state(conn, "bessemer-2021", BESSEMER.status, 3217)

    async with db.connect() as conn:
        before = await counts.get(conn, "bessemer-2021")
        writer = asyncio.create_task(recount())
        if db.dialect_name == "postgresql":  # on SQLite the writer waits for its turn
            await writer
        again = await counts.get(conn, "bessemer-2021")
    await writer
    async with db.connect() as conn:
        after = await counts.get(conn, "bessemer-2021")
    assert before == again == BESSEMER
    assert after == replace(BESSEMER, received=3217)


async def test_concurrent_writers_get_distinct_gapless_seqs(db: Database) -> None:
    await seed(db)

    async def writer(i: int) -> int:
        async with db.begin() as conn:
            return (await tallies.append(conn, bessemer_tally(i, i, i))).seq

    seqs = await asyncio.gather(*(writer(i) for i in range(20)))
    assert sorted(seqs) == list(range(1, 21))
    async with db.connect() as conn:
        stored = await tallies.history(conn, "bessemer-2021")
    assert [t.seq for t in stored] == list(range(1, 21))
    assert {t.votes["yes"]: t.seq for t in stored} == dict(enumerate(seqs))


# --- SQLite specifics -----------------------------------------------------------------------


def sqlite_url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


async def test_sqlite_file_is_created_with_wal_foreign_keys_and_busy_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep" / "er" / "tallybot.sqlite3"
    async with Database(sqlite_url(path)) as db, db.connect() as conn:
        pragmas = [
            (await conn.execute(text(f"PRAGMA {name}"))).scalar()
            for name in ("journal_mode", "foreign_keys", "busy_timeout")
        ]
    assert path.is_file()
    assert pragmas == ["wal", 1, 10_000]


async def test_reopening_a_sqlite_file_keeps_everything(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path / "tallybot.sqlite3")
    async with Database(url) as db:
        await seed(db)
        sub_id = await subscribe(db)
        async with db.begin() as conn:
            await tallies.append(conn, bessemer_tally(463, 1100))
            await tallies.append(conn, FINAL)
            await tallies.reject(conn, FINAL, reason="duplicate", detail="", at=T0)
            await audit.record(conn, AuditEntry(T0, "U", "subscribe", "bessemer-2021"))
            [delivery_id] = await outbox.enqueue(conn, [delivery(sub_id, 2)])
    async with Database(url) as db, db.connect() as conn:
        assert await migrations.current_version(conn) == migrations.latest()
        assert await counts.all_counts(conn) == [BESSEMER]
        assert [t.seq for t in await tallies.history(conn, "bessemer-2021")] == [1, 2]
        assert await tallies.last(conn, "bessemer-2021") == FINAL.with_seq(2)
        assert [r.reason for r in await tallies.rejected(conn, "bessemer-2021")] == ["duplicate"]
        assert [s.id for s in await subscriptions.for_channel(conn, SLACK)] == [sub_id]
        assert [e.action for e in await audit.recent(conn)] == ["subscribe"]
        got = await outbox.get(conn, delivery_id)
        assert got is not None
        assert got.status is DeliveryStatus.PENDING


async def test_memory_store_is_shared_by_every_connection() -> None:
    async with Database("sqlite+aiosqlite:///:memory:") as db:
        await seed(db)
        async with db.begin() as conn:
            await tallies.append(conn, bessemer_tally(463, 1100))
        async with db.connect() as conn:
            assert await counts.get(conn, "bessemer-2021") == BESSEMER

        async def writer(i: int) -> int:
            async with db.begin() as conn:
                return (await tallies.append(conn, bessemer_tally(i, i))).seq

        seqs = await asyncio.gather(*(writer(i) for i in range(10)))
        assert sorted(seqs) == list(range(2, 12))

        async def append_then_fail() -> None:
            async with db.begin() as conn:
                await tallies.append(conn, FINAL)
                raise Boom

        with pytest.raises(Boom):
            await append_then_fail()
        async with db.connect() as conn:
            assert len(await tallies.history(conn, "bessemer-2021")) == 11
    async with Database("sqlite+aiosqlite:///:memory:") as fresh, fresh.connect() as conn:
        assert await counts.all_counts(conn) == []


async def test_two_stores_on_one_sqlite_file_write_concurrently(tmp_path: Path) -> None:
    """Like two processes on one file: BEGIN IMMEDIATE + busy timeout make them queue."""
    url = sqlite_url(tmp_path / "shared.sqlite3")
    async with Database(url) as one, Database(url) as two:
        await seed(one)

        async def writer(db: Database, i: int) -> int:
            async with db.begin() as conn:
                return (await tallies.append(conn, bessemer_tally(i, i))).seq

        seqs = await asyncio.gather(*(writer((one, two)[i % 2], i) for i in range(10)))
    assert sorted(seqs) == list(range(1, 11))


@pytest.mark.parametrize("where", ["file", "memory"])
async def test_a_nested_sqlite_transaction_fails_at_once(tmp_path: Path, where: str) -> None:
    url = sqlite_url(tmp_path / "x.sqlite3") if where == "file" else "sqlite+aiosqlite:///:memory:"
    async with Database(url) as db, db.begin():
        with pytest.raises(StoreError, match="pass its `conn` on"):
            async with db.connect():
                pass


# --- opening, configuration, errors ---------------------------------------------------------


async def test_an_unreachable_postgres_is_a_store_error() -> None:
    db = Database("postgresql+asyncpg://postgres@127.0.0.1:1/test")
    with pytest.raises(StoreError, match="cannot reach the database"):
        await db.__aenter__()
    await db.__aexit__(None, None, None)
    assert db.dialect_name == "postgresql"


def test_bad_urls_and_schemas_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="store URL: unsupported database"):
        Database("mysql+aiomysql://root@localhost/tallybot")
    with pytest.raises(ConfigError, match="only supported on PostgreSQL"):
        Database("sqlite+aiosqlite:///:memory:", schema="x")


async def test_using_a_closed_store_says_how_to_open_it(tmp_path: Path) -> None:
    db = Database(sqlite_url(tmp_path / "x.sqlite3"))
    with pytest.raises(RuntimeError, match="async with Database"):
        async with db.begin():
            pass


async def test_every_table_lives_where_the_store_says(db: Database) -> None:
    """On PostgreSQL: in the given schema, which is the connection's current schema."""
    async with db.connect() as conn:
        if db.dialect_name == "postgresql":
            assert db.schema is not None
            assert await conn.scalar(text("SELECT current_schema()")) == db.schema
            query = "SELECT table_name FROM information_schema.tables WHERE table_schema = :s"
            rows = await conn.execute(text(query), {"s": db.schema})
        else:
            assert db.schema is None
            rows = await conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'table'"))
        assert {r[0] for r in rows} == {*metadata.tables, "alembic_version"}
