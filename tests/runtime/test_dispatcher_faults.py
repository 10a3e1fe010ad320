"""Nothing one delivery does stops the others (issue 11.1).

Members who unsubscribe at the worst moment, a store that fails while a result is recorded, a
renderer bug, a payload that cannot be read: each is the failure of that one delivery, logged
with it, retried or given up on; the worker loop goes on, and if it ever stops it is restarted
and ``/readyz`` says why meanwhile. Faults are injected through real seams: the commands a
member types, an adapter that fails, SQLite triggers that make the store itself fail.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bot.commands.handler import Commands
from bot.commands.request import Request
from bot.delivery.worker import Dispatcher
from bot.domain.message import Message, Outgoing
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.ops import readiness
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store import Database, outbox
from bot.store import subscriptions as sub_rows
from bot.store.outbox import DeliveryStatus
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.helpers import tally

CHAN = ChannelRef(Platform("console"), "local", "c1")
OTHER = ChannelRef(Platform("console"), "local", "c2")
ADMIN = ChannelRef(Platform("console"), "local", "admins")


async def no_sleep(seconds: float) -> None:
    return None


class Gated(RecordingAdapter):
    """Holds the next post to ``gated`` at the gate: before it goes (it waits for its turn) or
    after it went (its answer is on the way), until ``go`` is set."""

    def __init__(self, *, in_flight: bool) -> None:
        super().__init__()
        self.in_flight = in_flight
        self.gated: set[ChannelRef] = set()
        self.at_gate = asyncio.Event()
        self.go = asyncio.Event()

    async def _gate(self, channel: ChannelRef) -> None:
        if channel in self.gated:
            self.gated.discard(channel)
            self.at_gate.set()
            await self.go.wait()

    async def post(self, channel: ChannelRef, content: Outgoing, **kw: Any) -> str:
        if not self.in_flight:
            await self._gate(channel)
        message_id = await super().post(channel, content, **kw)
        if self.in_flight:
            await self._gate(channel)
        return message_id


def headlines(adapter: RecordingAdapter, channel: ChannelRef) -> list[str]:
    return [m.headline if isinstance(m, Message) else m.text for m in adapter.messages(channel)]


@pytest.mark.parametrize("in_flight", [False, True], ids=["waiting-for-its-turn", "in-flight"])
async def test_subscribe_live_then_unsubscribe_stops_nothing_for_anyone(
    sqlite_db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture, in_flight: bool
) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    commands = Commands(sqlite_db, pipeline, clock)
    adapter = Gated(in_flight=in_flight)
    dispatcher = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=no_sleep)
    await pipeline.ingest(tally(84, 201))
    member, other = (
        Request(CHAN, "7", "bo", "", home=True),
        Request(OTHER, "8", "cy", "", home=True),
    )
    for request, words in [
        (other, "subscribe bessemer-2021"),
        (member, "subscribe bessemer-2021 live"),
    ]:
        reply = await commands.handle(
            Request(request.channel, request.user_id, "x", words, home=True)
        )
        assert reply.ok, reply.text
    adapter.gated.add(CHAN)  # the scoreboard for the member's channel is on its way...
    with caplog.at_level(logging.INFO, logger="bot.delivery.worker"):
        draining = asyncio.create_task(dispatcher.drain(Platform("console")))
        await asyncio.wait_for(adapter.at_gate.wait(), timeout=10)
        reply = await commands.handle(
            Request(CHAN, "7", "bo", "unsubscribe bessemer-2021", home=True)
        )
        assert reply.ok, reply.text  # ...when the member unsubscribes
        adapter.go.set()
        await draining  # the dispatcher lives on

        # The next significant update reaches everyone still subscribed, and only them.
        result = await pipeline.ingest(tally(301, 290))  # the lead changes
        assert result.message is not None
        await dispatcher.drain(Platform("console"))
        restarted = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=no_sleep)
        assert await restarted.recover() == 0  # nothing left in doubt for a restart to send
        await restarted.drain(Platform("console"))

    assert headlines(adapter, OTHER) == [result.message.headline]
    # Waiting for its turn, the scoreboard is dropped; already on its way, it arrived.
    assert len(adapter.messages(CHAN)) == (1 if in_flight else 0)
    async with sqlite_db.connect() as conn:
        assert await sub_rows.for_channel(conn, CHAN) == []
        assert await outbox.depth(conn, Platform("console")) == 0
        (board,) = [
            d
            for d in [await outbox.get(conn, i) for i in range(1, 10)]
            if d is not None and d.channel == CHAN
        ]
    assert board.status is (DeliveryStatus.SENT if in_flight else DeliveryStatus.CANCELLED)
    said = [(r.getMessage(), getattr(r, "delivery", None)) for r in caplog.records]
    if in_flight:
        assert ("the scoreboard went out as its subscription was removed", board.id) in said
    else:
        assert (
            "dropped, never sent: its subscription was removed or disabled",
            board.id,
        ) in said
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


SENT_FAILS = """
CREATE TRIGGER sent_fails BEFORE UPDATE OF status ON outbox
WHEN NEW.status = 'sent' AND NEW.channel = 'c1'
BEGIN SELECT RAISE(ABORT, 'disk I/O error (injected)'); END
"""


async def test_a_store_error_recording_one_delivery_stops_no_other(
    sqlite_db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = Pipeline(sqlite_db, clock)
    adapter = RecordingAdapter()
    dispatcher = Dispatcher(sqlite_db, {Platform("console"): adapter}, clock, sleep=no_sleep)
    async with sqlite_db.begin() as conn:
        for channel in (CHAN, OTHER):
            await sub_rows.subscribe(
                conn, channel, "bessemer-2021", Mode.ALL, by="t", at=clock.now()
            )
        await conn.execute(text(SENT_FAILS))
    first = await pipeline.ingest(tally(84, 201))
    with caplog.at_level(logging.INFO, logger="bot.delivery.worker"):
        await dispatcher.drain(Platform("console"))  # CHAN's post goes out, its record fails
        async with sqlite_db.begin() as conn:
            await conn.execute(text("DROP TRIGGER sent_fails"))
        clock.advance(600)
        await dispatcher.drain(Platform("console"))
    assert first.message is not None
    assert headlines(adapter, OTHER) == [first.message.headline]
    assert headlines(adapter, CHAN) == [first.message.headline]  # once: found, not posted again
    async with sqlite_db.connect() as conn:
        rows = [await outbox.get(conn, i) for i in (1, 2)]
    assert [d.status if d else None for d in rows] == [DeliveryStatus.SENT] * 2
    failed = [r for r in caplog.records if r.getMessage().startswith("delivery failed unexpec")]
    assert [(r.levelno, getattr(r, "delivery", None)) for r in failed] == [
        (logging.ERROR, next(d.id for d in rows if d is not None and d.channel == CHAN))
    ]
    assert "StoreError" in failed[0].getMessage()
    assert dispatcher.stats.confirmed == 1


class RenderBug(RecordingAdapter):
    """An adapter whose rendering of anything for ``CHAN`` raises, as a renderer bug would."""

    async def post(self, channel: ChannelRef, content: Outgoing, **kw: Any) -> str:
        if channel == CHAN:
            raise KeyError("choices")  # not a DeliveryError: a bug
        return await super().post(channel, content, **kw)


@pytest.mark.parametrize("fault", ["render-bug", "unreadable-payload"])
async def test_a_delivery_that_cannot_be_sent_is_retried_then_given_up_alone(
    sqlite_db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture, fault: str
) -> None:
    pipeline = Pipeline(sqlite_db, clock, alert_channels=[ADMIN])
    adapter = RenderBug() if fault == "render-bug" else RecordingAdapter()
    dispatcher = Dispatcher(
        sqlite_db, {Platform("console"): adapter}, clock, sleep=no_sleep, max_attempts=3,
        alert_channels=[ADMIN],
    )  # fmt: skip
    async with sqlite_db.begin() as conn:
        for channel in (CHAN, OTHER):
            await sub_rows.subscribe(
                conn, channel, "bessemer-2021", Mode.ALL, by="t", at=clock.now()
            )
    first = await pipeline.ingest(tally(84, 201))
    if fault == "unreadable-payload":
        async with sqlite_db.begin() as conn:
            await conn.execute(
                text("UPDATE outbox SET payload = '{\"title\": 1' WHERE channel = 'c1'")
            )
    with caplog.at_level(logging.WARNING, logger="bot.delivery.worker"):
        for _ in range(4):
            await dispatcher.drain(Platform("console"))
            clock.advance(600)
    assert first.message is not None
    assert headlines(adapter, OTHER) == [first.message.headline]
    assert headlines(adapter, CHAN) == []
    (notice,) = headlines(adapter, ADMIN)
    assert notice.startswith("tallybot gave up on a message for bessemer-2021 in console:local/c1")
    async with sqlite_db.connect() as conn:
        (dead,) = await outbox.dead(conn)
    assert (dead.channel, dead.attempts) == (CHAN, 3)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 4  # three attempts, each logged with the delivery, then the give-up
    assert all(getattr(r, "delivery", None) == dead.id for r in errors)
    assert errors[0].exc_info is not None  # with the traceback of the bug


STORE_DOWN = """
CREATE TRIGGER store_down BEFORE UPDATE ON outbox
BEGIN SELECT RAISE(ABORT, 'database disk image is malformed (injected)'); END
"""


async def test_the_worker_loop_is_restarted_and_readyz_says_why_it_is_down(
    store_file: str, tmp_path: Path, clock: FakeClock
) -> None:
    cfg = parse(
        {
            "store": {"url": store_file},
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": "Amazon BHM1 union election, Bessemer AL",
                    "tie_holder": "no",
                    "choices": [{"id": "yes"}, {"id": "no"}],
                    "source": {"kind": "manual"},
                }
            ],
        },
        tmp_path / "tallybot.toml",
    )
    posted = asyncio.Event()

    class Watched(RecordingAdapter):
        async def post(self, channel: ChannelRef, content: Outgoing, **kw: Any) -> str:
            message_id = await super().post(channel, content, **kw)
            posted.set()
            return message_id

    adapter = Watched()
    backing_off, resume = asyncio.Event(), asyncio.Event()
    waits: list[float] = []

    async def sleep(seconds: float) -> None:  # the supervisor's wait before a restart
        waits.append(seconds)
        backing_off.set()
        await resume.wait()

    app = App(
        cfg, {Platform("console"): lambda commands: adapter}, clock=clock, sleep=sleep, poll=False
    )
    async with app:
        assert (await readiness.check(app)).ready
        async with app.db.begin() as conn:
            await sub_rows.subscribe(conn, CHAN, "bessemer-2021", Mode.ALL, by="t", at=clock.now())
            await conn.execute(text(STORE_DOWN))
        await app.pipeline.ingest(tally(84, 201))  # queued; claiming it fails
        await asyncio.wait_for(backing_off.wait(), timeout=10)
        down = await readiness.check(app)
        async with app.db.begin() as conn:
            await conn.execute(text("DROP TRIGGER store_down"))
        resume.set()
        await asyncio.wait_for(posted.wait(), timeout=10)
        up = await readiness.check(app)

    assert not down.ready
    (problem,) = down.to_json()["problems"]  # type: ignore[misc]
    assert problem.startswith("delivery:console: StoreError: ")
    assert "database disk image is malformed (injected)" in problem
    assert problem.endswith(f"(restarting in {waits[0]:.0f} s)")
    assert up.ready
    assert len(adapter.messages(CHAN)) == 1
