"""Slack deliveries paced request by request, and confirmed cheaply after a crash (11.2, 11.5).

- The attempt is noted only once the request's slot is granted: a fan-out cut off leaves in
  doubt only what was on its way, not every delivery that was queued.
- What is in doubt is confirmed with one conversations.history read per channel (whatever the
  number of its deliveries in doubt), paced under that method's own budget (Tier 3).
- A 429 is never a failed attempt: the delivery waits and goes again, however often, and is
  not in doubt (Slack posted nothing): no history read before it goes again.
- A final's chart uploads (files.getUploadURLExternal, files.completeUploadExternal) are paced
  under their own budgets (Tier 4): no 429s.

The whole bot against FakeSlack at its default limits, on the virtual clock of ``test_slack``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import func, select

from bot.delivery.pacing import ROOM
from bot.domain.message import Message
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.outbox import Delivery, DeliveryStatus
from bot.store.schema import outbox as outbox_table
from tests.adapters import test_slack
from tests.adapters.test_slack import VirtualTime, _never, adapter_for, bot_posts, config, running
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import tally

vt = test_slack.vt  # the fixtures, shared
fake = test_slack.fake

LEAD_CHANGES = [(84, 201), (400, 300), (400, 500)]
"""Three significant updates: first results, then the lead changes twice."""


async def subscribe(db: Database, fake: FakeSlack, vt: VirtualTime, n: int) -> list[str]:
    channels = [fake.add_channel(f"count-{i}") for i in range(n)]
    async with db.begin() as conn:
        for c in channels:
            ref = ChannelRef(Platform("slack"), fake.team_id, c)
            await sub_rows.subscribe(
                conn, ref, "bessemer-2021", Mode.ALL, by="t", at=vt.clock.now()
            )
    return channels


async def every_delivery(db: Database) -> list[Delivery]:
    async with db.connect() as conn:
        ids = (await conn.scalars(select(outbox_table.c.id).order_by("id"))).all()
        found = [await outbox.get(conn, i) for i in ids]
    return [d for d in found if d is not None]


def texts(fake: FakeSlack, channel: str) -> list[str]:
    return [m.text for m in bot_posts(fake, channel)]


async def test_a_429_is_never_a_failed_attempt(
    fake: FakeSlack, vt: VirtualTime, tmp_path: Path
) -> None:
    async with running(fake, config(tmp_path, fake), vt) as bot:
        (channel,) = await subscribe(bot.app.db, fake, vt, 1)
        fake.fail_next("chat.postMessage", status=429, times=12)  # more than max_attempts (8)
        await bot.ingest(84, 201)
        await bot.settle()
        (delivery,) = await every_delivery(bot.app.db)
        stats = bot.app.dispatcher.stats
    assert len(bot_posts(fake, channel)) == 1
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.SENT, 0)
    assert (stats.rate_limited, stats.retried, stats.dead) == (12, 0, 0)
    # A 429 means nothing was posted: the post is not in doubt, its channel is not read.
    assert (stats.checks, len(fake.calls_to("conversations.history"))) == (0, 0)


async def test_posts_in_doubt_are_confirmed_with_one_paced_read_per_channel(
    fake: FakeSlack, vt: VirtualTime, tmp_path: Path
) -> None:
    cfg = config(tmp_path, fake)
    # A bot killed in the middle of three fan-outs to 60 channels: every delivery was on its
    # way (SENDING, attempt noted), and the first of each channel reached Slack.
    async with Database(cfg.store_url) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, cfg.counts[0].count)
        channels = await subscribe(db, fake, vt, 60)
        pipeline = Pipeline(db, vt.clock)
        expected = []
        for yes, no in LEAD_CHANGES:
            result = await pipeline.ingest(tally(yes, no, challenged=505, received=3215))
            assert result.message is not None
            assert result.message.significant
            expected.append(result.message.headline)
        deliveries = await every_delivery(db)
        async with db.begin() as conn:
            await outbox.mark_sending(conn, [d.id for d in deliveries], at=vt.clock.now())
        async with adapter_for(fake, cfg, _never) as slack:
            for d in deliveries:
                if d.tally_seq == 1:
                    await slack.post(d.channel, Message.from_json(d.payload), key=f"tb{d.id}")
    before = len(fake.calls)
    async with running(fake, cfg, vt) as bot:
        await bot.app.dispatcher.recover()
        await bot.settle()
        stats = bot.app.dispatcher.stats
        final = await every_delivery(bot.app.db)

    reads = fake.calls_to("conversations.history")
    assert len(reads) == 60  # one per channel, not one per delivery in doubt (180)
    assert fake.count_429 == 0  # 60 reads > 50 a minute: paced, not refused
    assert reads[-1].time - reads[0].time >= 60.0
    assert (stats.checks, stats.confirmed) == (60, 60)
    assert all(d.status is DeliveryStatus.SENT for d in final)
    for channel in channels:
        posted = texts(fake, channel)
        assert len(posted) == 3  # nothing lost, nothing doubled, in order
        assert all(h in t for h, t in zip(expected, posted, strict=True))
    made = [c.method for c in fake.calls[before:] if c.method.startswith(("chat.", "conv"))]
    assert len(made) == 60 + 120  # the reads, and the posts still missing: nothing more


class Stalled(VirtualTime):
    """The bot's waits for a slot never end: what had to wait for its turn is still waiting
    when the bot is cut off."""

    async def sleep(self, seconds: float) -> None:
        await asyncio.Event().wait()


async def test_a_fan_out_cut_off_leaves_in_doubt_only_what_was_on_its_way(
    fake: FakeSlack, vt: VirtualTime, tmp_path: Path
) -> None:
    cfg = config(tmp_path, fake)
    stalled = Stalled()
    stalled.clock = vt.clock
    async with running(fake, cfg, stalled) as bot:
        channels = await subscribe(bot.app.db, fake, stalled, 40)
        message = await bot.ingest(84, 201)  # the dispatcher's own loop sends it
        # chat.postMessage takes 5 a second, evenly spaced: 1 goes out (or 2), the others wait
        # for their turn (which never comes: this clock's sleeps never end)...
        await fake.wait_for(lambda: len(fake.calls_to("chat.postMessage")) == 1, timeout=30)
        async with bot.app.db.connect() as conn:  # ...each of them claimed by then
            claimed = await conn.scalar(
                select(func.count()).where(outbox_table.c.status != DeliveryStatus.PENDING.value)
            )
    # Cut off there (leaving the app cancels the dispatcher, like a kill): only the requests
    # that went out may have reached Slack, so only they and the few noted to go next (at most
    # ROOM, waiting for the workspace's turn) are in doubt.
    left = await every_delivery_of(cfg.store_url)
    in_doubt = {d.channel.channel for d in left if d.sending_at is not None}
    in_doubt -= {d.channel.channel for d in left if d.status is DeliveryStatus.SENT}
    assert claimed == 40
    assert 1 <= len(in_doubt) <= len(fake.calls_to("chat.postMessage")) + ROOM
    reads_before = len(fake.calls_to("conversations.history"))
    async with running(fake, cfg, vt) as bot:
        await bot.settle()
    reads = fake.calls_to("conversations.history")[reads_before:]
    assert {r.args["channel"] for r in reads} == in_doubt  # each read once, no other
    assert len(reads) == len(in_doubt)
    assert fake.count_429 == 0
    for channel in channels:
        (posted,) = bot_posts(fake, channel)
        assert message.headline in posted.text


async def every_delivery_of(store_url: str) -> list[Delivery]:
    async with Database(store_url) as db:
        return await every_delivery(db)


async def test_a_finals_chart_uploads_are_paced_under_their_own_budgets(
    fake: FakeSlack, vt: VirtualTime, tmp_path: Path
) -> None:
    async with running(fake, config(tmp_path, fake), vt) as bot:
        channels = await subscribe(bot.app.db, fake, vt, 120)  # more than 100 a minute
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
    assert final.final
    assert fake.count_429 == 0
    assert len(fake.calls_to("files.getUploadURLExternal")) == 120
    assert len(fake.calls_to("files.completeUploadExternal")) == 120
    by_channel = {u.channel: u for u in fake.uploads}
    for channel in channels:
        (posted,) = bot_posts(fake, channel)
        assert by_channel[channel].thread_ts == posted.ts  # its chart, in its thread, once
    assert len(fake.uploads) == 120
