"""The pipeline: one transaction per tally, deliveries planned by subscription mode."""

from __future__ import annotations

from bot.domain.detect import Accepted, NoChange, Rejected, RejectReason
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import DeliveryAction
from bot.testing.clock import FakeClock
from tests.helpers import tally

DISCORD = ChannelRef(Platform("discord"), "g1", "c1")
CONSOLE = ChannelRef(Platform("console"), "local", "console")
SLACK_LIVE = ChannelRef(Platform("slack"), "T1", "C1")
ADMIN = ChannelRef(Platform("console"), "local", "admins")


async def subscribe(db: Database, clock: FakeClock) -> None:
    async with db.begin() as conn:
        for channel, mode in ((DISCORD, Mode.EVENTS), (CONSOLE, Mode.ALL), (SLACK_LIVE, Mode.LIVE)):
            await sub_rows.subscribe(conn, channel, "bessemer-2021", mode, by="t", at=clock.now())


async def queued(db: Database) -> list[tuple[str, str]]:
    out = []
    async with db.connect() as conn:
        for platform in map(Platform, ("discord", "slack", "console")):
            for d in await outbox.due(
                conn, platform, now=FakeClock().now().replace(year=2100), limit=100
            ):
                out.append((str(d.channel), d.action.value))
    return sorted(out)


async def test_significant_update_reaches_every_mode(sqlite_db: Database, clock: FakeClock) -> None:
    await subscribe(sqlite_db, clock)
    woken: list[set[Platform]] = []
    pipeline = Pipeline(sqlite_db, clock, on_queued=woken.append)
    result = await pipeline.ingest(tally(84, 201))
    assert isinstance(result.detection, Accepted)
    assert result.tally.seq == 1
    assert result.message is not None
    assert result.message.significant
    assert await queued(sqlite_db) == sorted(
        [
            (str(DISCORD), "post"),
            (str(CONSOLE), "post"),
            (str(SLACK_LIVE), "edit_live"),
            (str(SLACK_LIVE), "post"),
        ]
    )
    assert woken == [{Platform("discord"), Platform("console"), Platform("slack")}]


async def test_routine_update_only_for_all_and_live(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    await pipeline.ingest(tally(84, 201))
    await subscribe(sqlite_db, clock)
    result = await pipeline.ingest(tally(90, 210))
    assert result.message is not None
    assert not result.message.significant
    assert await queued(sqlite_db) == sorted(
        [(str(CONSOLE), "post"), (str(SLACK_LIVE), "edit_live")]
    )


async def test_no_change_writes_nothing(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    await pipeline.ingest(tally(84, 201))
    result = await pipeline.ingest(tally(84, 201, source="another"))
    assert isinstance(result.detection, NoChange)
    async with sqlite_db.connect() as conn:
        assert len(await tally_rows.history(conn, "bessemer-2021")) == 1


async def test_rejected_tally_is_stored_with_its_reason_and_admins_told(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline = Pipeline(sqlite_db, clock, alert_channels=[ADMIN])
    await pipeline.ingest(tally(463, 1100))
    result = await pipeline.ingest(tally(463, 1090))
    assert isinstance(result.detection, Rejected)
    assert result.detection.reason is RejectReason.DECREASE
    async with sqlite_db.connect() as conn:
        rejected = await tally_rows.rejected(conn, "bessemer-2021")
        last = await tally_rows.last(conn, "bessemer-2021")
    assert [r.reason for r in rejected] == ["decrease"]
    assert "no 1,100 -> 1,090" in rejected[0].detail
    assert last is not None
    assert last.votes["no"] == 1100
    assert await queued(sqlite_db) == [(str(ADMIN), DeliveryAction.ALERT.value)]


async def test_count_status_follows_the_tally_state(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    await pipeline.ingest(tally(463, 1100, state=TallyState.PAUSED))
    async with sqlite_db.connect() as conn:
        count = await count_rows.get(conn, "bessemer-2021")
    assert count is not None
    assert count.status.value == "paused"
    await pipeline.ingest(
        tally(738, 1798, void=76, challenged=505, received=3117, state=TallyState.FINAL)
    )
    async with sqlite_db.connect() as conn:
        count = await count_rows.get(conn, "bessemer-2021")
    assert count is not None
    assert (count.status.value, count.received) == ("final", 3117)


async def test_restart_announces_nothing_again(
    store_file: str, sqlite_db: Database, clock: FakeClock
) -> None:
    await subscribe(sqlite_db, clock)
    await Pipeline(sqlite_db, clock).ingest(tally(463, 1100))
    async with Database(store_file) as again:
        result = await Pipeline(again, clock).ingest(tally(463, 1100))
        assert isinstance(result.detection, NoChange)
        assert result.queued == frozenset()


async def test_admin_update_is_audited(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    await pipeline.ingest(tally(463, 1100))
    await pipeline.ingest(tally(500, 1150), actor="discord:42 (ana)", action="update")
    async with sqlite_db.connect() as conn:
        entries = await audit_rows.recent(conn, count_id="bessemer-2021")
    assert len(entries) == 1
    e = entries[0]
    assert (e.actor, e.action, e.allowed) == ("discord:42 (ana)", "update", True)
    assert "no=1100" in e.old
    assert "no=1150" in e.new
