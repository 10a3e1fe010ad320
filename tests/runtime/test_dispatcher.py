"""The dispatcher: deliver once, in order, coalesced; retry transient, disable permanent."""

from __future__ import annotations

import asyncio
import logging

import pytest

import tests.charts
from bot.charts import chart
from bot.charts.chart import ChartCache
from bot.charts.process import ChartProcess
from bot.delivery.adapter import Earlier
from bot.delivery.pacing import Pace, unpaced
from bot.delivery.worker import Dispatcher, coalesce
from bot.domain.message import Attachment, Message, Notice, Outgoing
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.errors import TransientDeliveryError
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryStatus
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.charts import Counted
from tests.helpers import tally

CHAN = ChannelRef(Platform("console"), "local", "c1")
OTHER = ChannelRef(Platform("console"), "local", "c2")
ADMIN = ChannelRef(Platform("console"), "local", "admins")


async def fake_sleep(seconds: float) -> None:
    return None


async def setup(
    db: Database,
    clock: FakeClock,
    modes: dict[ChannelRef, Mode],
    *,
    charts: ChartCache | None = None,
    chart_timeout: float = 30.0,
    adapter: RecordingAdapter | None = None,
) -> tuple[Pipeline, Dispatcher, RecordingAdapter]:
    adapter = adapter or RecordingAdapter()
    async with db.begin() as conn:
        for channel, mode in modes.items():
            await sub_rows.subscribe(conn, channel, "bessemer-2021", mode, by="t", at=clock.now())
    dispatcher = Dispatcher(
        db,
        {Platform("console"): adapter},
        clock,
        sleep=fake_sleep,
        alert_channels=[ADMIN],
        charts=charts,
        chart_timeout=chart_timeout,
    )
    return Pipeline(db, clock, alert_channels=[ADMIN]), dispatcher, adapter


def headlines(adapter: RecordingAdapter, channel: ChannelRef) -> list[str]:
    out = []
    for m in adapter.messages(channel):
        out.append(m.headline if isinstance(m, Message) else f"[notice] {m.text}")
    return out


async def test_each_message_is_sent_once(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline, dispatcher, adapter = await setup(
        sqlite_db, clock, {CHAN: Mode.ALL, OTHER: Mode.EVENTS}
    )
    await pipeline.ingest(tally(84, 201))
    await dispatcher.drain(Platform("console"))
    await pipeline.ingest(tally(90, 210))
    await dispatcher.drain(Platform("console"))
    assert await dispatcher.drain(Platform("console")) == 0
    assert headlines(adapter, CHAN) == [
        "First results: No union leads by 117",
        "No union leads by 120",
    ]
    assert headlines(adapter, OTHER) == ["First results: No union leads by 117"]
    async with sqlite_db.connect() as conn:
        assert await outbox.depth(conn, Platform("console")) == 0


async def test_a_channel_behind_gets_the_latest_state_and_every_significant_event(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.ALL})
    for figures in [(84, 201), (90, 210), (95, 230), (310, 720), (320, 730), (330, 745)]:
        await pipeline.ingest(tally(*figures))
    await dispatcher.drain(Platform("console"))
    assert headlines(adapter, CHAN) == [
        "First results: No union leads by 117",
        "A quarter of the ballots counted: No union leads by 410",
        "No union leads by 415",
    ]
    assert dispatcher.stats.superseded == 3


async def test_final_is_never_dropped() -> None:
    # coalesce() only drops routine posts with a newer post behind them.
    from datetime import UTC, datetime

    from bot.store.outbox import Delivery, DeliveryAction

    def d(i: int, significant: bool) -> Delivery:
        return Delivery(
            subscription_id=1, channel=CHAN, count_id="x", tally_seq=i, action=DeliveryAction.POST,
            significant=significant, payload="{}", created_at=datetime(2021, 1, 1, tzinfo=UTC),
            id=i, status=DeliveryStatus.PENDING, attempts=0,
            next_attempt_at=datetime(2021, 1, 1, tzinfo=UTC),
        )  # fmt: skip

    send, drop = coalesce([d(1, False), d(2, True), d(3, False), d(4, True)])
    assert [x.id for x in send] == [2, 4]
    assert [x.id for x in drop] == [1, 3]


async def test_transient_failure_is_retried_after_backoff(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.ALL})
    adapter.transient_failures = 1
    await pipeline.ingest(tally(84, 201))
    await dispatcher.drain(Platform("console"))
    assert adapter.messages(CHAN) == []
    assert dispatcher.stats.retried == 1
    clock.advance(300)
    await dispatcher.drain(Platform("console"))
    assert headlines(adapter, CHAN) == ["First results: No union leads by 117"]


async def test_permanent_failure_disables_only_that_subscription(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.ALL, OTHER: Mode.ALL})
    adapter.gone_channels.add(CHAN)
    await pipeline.ingest(tally(84, 201))
    await dispatcher.drain(Platform("console"))
    await dispatcher.drain(Platform("console"))  # the admin notice queued by the failure
    await pipeline.ingest(tally(90, 210))
    await dispatcher.drain(Platform("console"))
    assert len(headlines(adapter, OTHER)) == 2
    notices = headlines(adapter, ADMIN)
    assert len(notices) == 1
    assert "stopped posting for bessemer-2021 in console:local/c1" in notices[0]
    async with sqlite_db.connect() as conn:
        subs = {
            s.channel: s
            for s in await sub_rows.for_count(conn, "bessemer-2021", enabled_only=False)
        }
        dead = await outbox.dead(conn)
    assert not subs[CHAN].enabled
    assert subs[OTHER].enabled
    assert [d.channel for d in dead] == [CHAN]


async def test_live_scoreboard_is_edited_in_place_and_reposted_when_gone(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.LIVE})
    await pipeline.ingest(tally(84, 201))  # significant: scoreboard + a post
    await dispatcher.drain(Platform("console"))
    await pipeline.ingest(tally(90, 210))  # routine: the scoreboard only
    await dispatcher.drain(Platform("console"))
    board = adapter.posted[0]
    assert len(adapter.posted) == 2
    assert len(board.edits) == 1
    adapter.deleted_messages.add(board.message_id)
    await pipeline.ingest(tally(95, 230))
    await dispatcher.drain(Platform("console"))
    assert len(adapter.posted) == 3  # a new scoreboard
    async with sqlite_db.connect() as conn:
        (sub,) = await sub_rows.for_channel(conn, CHAN)
    assert sub.live_message_id == adapter.posted[2].message_id


async def test_a_crash_mid_send_does_not_double_a_post(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, _dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.ALL})
    await pipeline.ingest(tally(84, 201))
    async with sqlite_db.begin() as conn:
        (item,) = await outbox.due(conn, Platform("console"), now=clock.now(), limit=10)
        await outbox.mark_sending(conn, [item.id], at=clock.now())
    # The post went out but the process died before recording it.
    await adapter.post(CHAN, Message.from_json(item.payload), key=f"tb{item.id}")
    restarted = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=fake_sleep)
    assert await restarted.recover() == 1
    await restarted.drain(Platform("console"))
    assert len(adapter.messages(CHAN)) == 1
    async with sqlite_db.connect() as conn:
        done = await outbox.get(conn, item.id)
    assert done is not None
    assert done.status is DeliveryStatus.SENT


async def test_alerts_are_delivered_as_notices(sqlite_db: Database, clock: FakeClock) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {})
    await pipeline.alert(Notice("source x is stale", "bessemer-2021"))
    await dispatcher.drain(Platform("console"))
    assert headlines(adapter, ADMIN) == ["[notice] source x is stale"]


async def test_a_429_storm_loses_nothing_and_doubles_nothing(
    sqlite_db: Database, clock: FakeClock
) -> None:
    channels = [ChannelRef(Platform("console"), "local", f"c{i}") for i in range(30)]
    pipeline, dispatcher, adapter = await setup(
        sqlite_db, clock, dict.fromkeys(channels, Mode.EVENTS)
    )
    adapter.transient_failures = 45  # every send fails until these run out
    await pipeline.ingest(tally(84, 201))  # first results
    await pipeline.ingest(tally(310, 720))  # a quarter counted
    for _ in range(20):
        await dispatcher.drain(Platform("console"))
        clock.advance(600)
    for channel in channels:
        assert headlines(adapter, channel) == [
            "First results: No union leads by 117",
            "A quarter of the ballots counted: No union leads by 410",
        ]
    assert dispatcher.stats.retried >= 45
    assert dispatcher.stats.dead == 0
    async with sqlite_db.connect() as conn:
        assert await outbox.depth(conn, Platform("console")) == 0


async def test_a_retry_is_never_overtaken_by_a_later_message(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, dispatcher, adapter = await setup(sqlite_db, clock, {CHAN: Mode.EVENTS})
    adapter.transient_failures = 1
    await pipeline.ingest(tally(84, 201))  # first results: fails, waits for its retry
    await dispatcher.drain(Platform("console"))
    await pipeline.ingest(tally(310, 720))  # a quarter counted: due now, but must wait
    await dispatcher.drain(Platform("console"))
    assert adapter.messages(CHAN) == []
    clock.advance(600)
    await dispatcher.drain(Platform("console"))
    assert headlines(adapter, CHAN) == [
        "First results: No union leads by 117",
        "A quarter of the ballots counted: No union leads by 410",
    ]


async def test_only_sends_cut_off_by_a_crash_are_treated_as_maybe_sent(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline, _, adapter = await setup(sqlite_db, clock, {CHAN: Mode.ALL, OTHER: Mode.ALL})
    await pipeline.ingest(tally(84, 201))
    async with sqlite_db.begin() as conn:
        first, second = await outbox.due(conn, Platform("console"), now=clock.now(), limit=10)
        await outbox.mark_sending(conn, [first.id, second.id])  # the batch is claimed...
        await outbox.mark_attempt(conn, first.id, at=clock.now())  # ...one send started
    # kill -9 here; a new process recovers both and sends them
    restarted = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=fake_sleep)
    assert await restarted.recover() == 2
    await restarted.drain(Platform("console"))
    assert adapter.checked_keys == [f"tb{first.id}"]
    assert len(adapter.posted) == 2


FINAL = tally(738, 1798, void=76, challenged=505, received=3117, state=TallyState.FINAL)


async def test_the_final_message_carries_the_chart_and_no_other_does(
    sqlite_db: Database,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    chart_process: ChartProcess,
) -> None:
    renders = Counted(chart_process)
    pipeline, dispatcher, adapter = await setup(
        sqlite_db, clock, {CHAN: Mode.ALL, OTHER: Mode.LIVE, ADMIN: Mode.EVENTS},
        charts=ChartCache(process=renders),
    )  # fmt: skip
    post = adapter.post
    failed: list[str] = []
    charted: list[str] = []  # the key of every post that carried a chart, each attempt

    async def fails_once_in_chan(
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        if attachment is not None:
            charted.append(key)
        if channel == CHAN and attachment is not None and not failed:
            failed.append(key)  # as if the request went out and its answer was lost
            await post(channel, content, key=key, pace=pace, attachment=attachment)
            raise TransientDeliveryError("503 service unavailable", retry_after=0.0)
        return await post(
            channel, content, key=key, pace=pace, attachment=attachment, earlier=earlier
        )

    monkeypatch.setattr(adapter, "post", fails_once_in_chan)
    await pipeline.ingest(tally(84, 201, challenged=505, received=3117))
    await pipeline.ingest(tally(90, 230, challenged=505, received=3117))  # routine
    await dispatcher.drain(Platform("console"))
    await pipeline.ingest(FINAL)
    await dispatcher.drain(Platform("console"))
    clock.advance(600)
    await dispatcher.drain(Platform("console"))  # the retry, with the chart again
    corrected_final = tally(
        739, 1797, void=76, challenged=505, received=3117, state=TallyState.FINAL, correction=True
    )
    await pipeline.ingest(corrected_final)
    await dispatcher.drain(Platform("console"))

    for channel in (CHAN, OTHER, ADMIN):
        posts = [p for p in adapter.posted if p.channel == channel]
        final, corrected = posts[-2:]
        assert isinstance(final.content, Message)
        assert final.content.final
        assert final.attachment is not None
        assert final.attachment.filename == "bessemer-2021-3.png"
        assert final.attachment.data[:8] == b"\x89PNG\r\n\x1a\n"
        assert "Final tally: No union wins" in final.attachment.description
        assert corrected.attachment is not None  # a corrected final is a final too
        assert corrected.attachment.filename == "bessemer-2021-4.png"
        assert [p.attachment for p in posts[:-2]] == [None] * (len(posts) - 2)
    (board,) = [p for p in adapter.posted if p.channel == OTHER and p.edits]
    last = board.edits[-1]
    assert isinstance(last, Message)
    assert last.final  # the live scoreboard shows the final too, edited: no chart there
    assert board.attachment is None
    assert len([p for p in adapter.posted if p.channel == CHAN]) == 4  # each once
    assert dispatcher.stats.retried == 1
    assert adapter.checked_keys == failed  # looked for before the retry, and not posted again
    assert charted.count(failed[0]) == 2  # the retry carried the chart again
    assert len(charted) == 3 + 1 + 3  # three channels' finals (one tried twice), corrections
    assert renders.seqs == [3, 4]  # one render per final, whatever the channels and retries


@pytest.mark.parametrize("failure", ["raises", "too-slow", "no-cache"])
async def test_a_chart_that_cannot_be_drawn_never_holds_the_final_back(
    sqlite_db: Database,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: str,
    chart_process: ChartProcess,
) -> None:
    if failure == "raises":
        monkeypatch.setattr(chart, "render_chart", tests.charts.broken)
    charts = None if failure == "no-cache" else ChartCache(process=chart_process)
    pipeline, dispatcher, adapter = await setup(
        sqlite_db, clock, {CHAN: Mode.EVENTS}, charts=charts,
        chart_timeout=0.0 if failure == "too-slow" else 30.0,
    )  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
        await pipeline.ingest(FINAL)
        await dispatcher.drain(Platform("console"))
    if charts is not None:  # let the abandoned render finish before the loop closes
        await asyncio.gather(*charts._rendering.values(), return_exceptions=True)

    (posted,) = adapter.posted
    assert isinstance(posted.content, Message)
    assert posted.content.final
    assert posted.attachment is None
    assert dispatcher.stats.sent == 1
    warned = [r.getMessage() for r in caplog.records if r.name == "bot.delivery.worker"]
    assert (
        warned
        == {
            "raises": ["the final message goes without its chart: RuntimeError: no fonts"],
            "too-slow": ["the final message goes without its chart: not drawn within 0 s"],
            "no-cache": [],
        }[failure]
    )
