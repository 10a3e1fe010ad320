"""One delivery, start to end: confirm, send, record. The dispatcher's per-action handling.

:class:`Courier` carries the deliveries of one platform out, one at a time per channel:

1. **Confirm.** A delivery whose earlier attempt may have reached the platform (``sending_at``
   is set: a request that could post it was about to go out, then the answer was lost or the
   process was killed) is first looked for in its channel, unless the platform itself drops a
   repeat with the same key for a while yet (Discord's nonce, ``Adapter.dedup_window``). One
   read of the channel (:class:`ChannelCheck`) serves every such delivery of that channel.
2. **Send.** Each request the adapter makes goes through a :class:`DeliveryPace`: it waits for
   its turn under the platform's buckets (``bot.delivery.pacing``) and only then, right before it
   goes out, notes the attempt in the store (``outbox.mark_attempt``), which also tells it whether
   the delivery may still go out (its subscription may have been removed meanwhile).
3. **Record** the outcome: SENT with the platform's message id; a transient failure retried
   with jittered exponential backoff (a 429 waits its Retry-After and is not counted as an
   attempt); a permanent one (channel gone, permission lost) DEAD, the subscription disabled
   and the admins told; a channel that got a new id (``ChannelMoved``) takes its subscriptions
   and deliveries there (``bot.store.channel_moves``). Nothing is retried forever: after
   ``max_attempts`` it is DEAD too.

Nothing that goes wrong with one delivery escapes :meth:`Courier.deliver`: a store error, a
renderer bug or a payload it cannot read is logged with the delivery and retried like a
transient failure (so, at worst, ends DEAD). Only a failure to record that (the store is down)
reaches the dispatcher, whose supervisor restarts the platform's loop.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.base.clock import Clock
from bot.base.retry import backoff
from bot.delivery.adapter import Adapter, Earlier
from bot.delivery.alert_groups import group_of, queue_stopped
from bot.delivery.attempt import DeliveryPace, Progress, Stats, key_of, message_of, where
from bot.delivery.final_charts import ChartStep, FinalCharts, chart_step
from bot.delivery.pacing import Pacer
from bot.delivery.places import Places
from bot.delivery.publishing import Publishing
from bot.domain.message import Notice, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import (
    ChannelMoved,
    DeliveryCancelled,
    DeliveryError,
    MessageGone,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)
from bot.ops.hooks import Hooks
from bot.store import Database, outbox, place_alerts
from bot.store import follows as follow_rows
from bot.store import subscriptions as sub_rows
from bot.store.channel_moves import follow
from bot.store.group_commit import GroupCommit
from bot.store.outbox import Delivery, DeliveryAction, NewDelivery

log = logging.getLogger("bot.delivery.worker")


def looked_for(d: Delivery) -> str:
    """The key of the message that shows ``d`` once it went out: its own, or for a chart step
    the key of the message the chart goes with."""
    return ChartStep.of(d).key if d.action is DeliveryAction.CHART else key_of(d)


Outcome = Callable[[Delivery, str], None]
"""Told what became of each delivery: sent, edited, retried, rate_limited, dead, cancelled."""


class ChannelCheck:
    """One read of a channel for every delivery of it that may have gone out already."""

    def __init__(
        self,
        courier: Courier,
        channel: ChannelRef,
        items: Sequence[Delivery],
        progress: Progress | None = None,
    ) -> None:
        self.courier = courier
        self.channel = channel
        self.progress = progress or Progress(courier.clock)
        self.doubtful = {
            d.id: d
            for d in items
            if courier.needs_check(d) and d.action is not DeliveryAction.PUBLISH
        }
        self._found: dict[str, Earlier] | None = None
        self.unfollowed: set[int] = set()
        """The follows whose DMs of these the courier unfollowed (the person blocked the bot):
        their DMs still among these were cancelled with them, and are dropped unattempted."""

    async def earlier(self, d: Delivery) -> Earlier | None:
        """``d``'s message if an earlier attempt posted it; None if none did (or could)."""
        if d.id not in self.doubtful:
            return None
        if self._found is None:
            times = [x.sending_at for x in self.doubtful.values() if x.sending_at is not None]
            keys = [looked_for(x) for x in self.doubtful.values()]
            c = self.courier
            c.stats.checks += 1
            async with self.progress.repairing():
                self._found = await c.adapter.find_posted(
                    self.channel,
                    keys,
                    since=min(times),
                    pace=DeliveryPace(c.pacer, progress=self.progress),
                )
        found = self._found.get(looked_for(d))
        if d.action is DeliveryAction.CHART and found is not None and not found.with_attachment:
            found = None  # the message is there, its chart is not
        if found is not None:
            self.courier.stats.confirmed += 1
            log.info("already posted by an earlier attempt: not sent again", extra=where(d))
        return found


class Courier:
    """Carries out the deliveries of one platform (see the module docstring)."""

    def __init__(
        self,
        db: Database,
        adapter: Adapter,
        pacer: Pacer,
        clock: Clock,
        *,
        charts: FinalCharts,
        stats: Stats,
        metrics: Hooks,
        outcome: Outcome,
        alerted: Callable[[set[Platform]], None],
        alert_channels: Sequence[ChannelRef] = (),
        max_attempts: int = 8,
        rng: random.Random | None = None,
        instance: str | None = None,
        claimant: str | None = None,
    ) -> None:
        """``instance``: the id of this instance, named in the admin notices it queues;
        ``claimant``: whose claims the deliveries it is given are under (a delivery whose
        claim is no longer its own does not go out)."""
        self.db = db
        self.instance = instance
        self.claimant = claimant
        self.adapter = adapter
        self.pacer = pacer
        self.clock = clock
        self.charts = charts
        self.stats = stats
        self.metrics = metrics
        self.outcome = outcome
        self.alerted = alerted
        self.alert_channels = tuple(alert_channels)
        self.max_attempts = max_attempts
        self.rng = rng or random.Random()
        self.places = Places(db, adapter, self.tell)
        self.publishing = Publishing(db, adapter, clock, self.tell)
        self.notes = GroupCommit[int, bool](db, self._write_notes)
        """The attempts about to go out, noted together (``bot.store.group_commit``)."""
        self.records = GroupCommit[tuple[int, str], None](db, self._write_records)
        """The messages sent, recorded together."""

    async def aclose(self) -> None:
        """Write the notes and records handed in before the store closes."""
        await self.notes.aclose()
        await self.records.aclose()

    def needs_check(self, d: Delivery) -> bool:
        """Whether an earlier attempt of ``d`` may have posted it, with nothing on the platform
        to drop a repeat: then its channel is read first."""
        if d.sending_at is None:
            return False
        window = self.adapter.dedup_window
        return window <= 0 or (self.clock.now() - d.sending_at).total_seconds() >= window

    def check_for(
        self, channel: ChannelRef, items: Sequence[Delivery], progress: Progress | None = None
    ) -> ChannelCheck:
        """What reads ``channel`` (once) for those of ``items`` that may have gone out already;
        ``progress``: where the channel's deliveries stand (see :class:`Progress`)."""
        return ChannelCheck(self, channel, items, progress)

    async def deliver(self, d: Delivery, check: ChannelCheck) -> bool:
        """Send ``d`` and record the outcome; False when the rest of its channel must wait.

        Raises only when recording a failure fails too (the store is down)."""
        if d.action is DeliveryAction.DIRECT and d.subscription_id in check.unfollowed:
            self.stats.cancelled += 1  # cancelled in the store with its follow
            self.outcome(d, "cancelled")
            log.info("dropped, never sent: its follower was unfollowed", extra=where(d))
            return True
        try:
            return await self._deliver(d, check)
        except DeliveryCancelled as exc:
            self.stats.cancelled += 1
            self.outcome(d, "cancelled")
            log.info("dropped, never sent: %s", exc, extra=where(d))
            return True
        except Exception as exc:  # a bug or the store: this delivery fails, not the worker
            log.error(
                "delivery failed unexpectedly: %s: %s", type(exc).__name__, exc,
                exc_info=exc, extra=where(d),
            )  # fmt: skip
            await self._retry(d, TransientDeliveryError(f"{type(exc).__name__}: {exc}"))
            return False

    async def _deliver(self, d: Delivery, check: ChannelCheck) -> bool:
        content: Outgoing
        if d.action is DeliveryAction.ALERT:
            content = Notice.from_json(d.payload)
        elif d.action is DeliveryAction.CHART:
            content = ChartStep.of(d).message
        elif d.action is DeliveryAction.PUBLISH:
            content = Notice("", d.count_id)  # publishes a message posted before: shows none
        else:
            content = message_of(d.payload)
        pace = DeliveryPace(
            self.pacer,
            lambda: self._note_attempt(d),
            check.progress,
            unnote=None if d.sending_at is not None else lambda: self._unnote_attempt(d),
            direct=d.action is DeliveryAction.DIRECT,
        )
        then = None
        try:
            earlier = None
            if d.action is DeliveryAction.CHART and ChartStep.of(d).thread is not None:
                earlier = await self._find(replace(d, channel=ChartStep.of(d).place(d)), check)
            elif d.action not in (DeliveryAction.REPLY, DeliveryAction.PUBLISH):
                earlier = await check.earlier(d)
            if d.action is DeliveryAction.PUBLISH:
                published = await self.publishing.publish(d, pace)
                if published is None:  # it gave way (recorded)
                    self.stats.superseded += 1
                    self.outcome(d, "superseded")
                    return True
                message_id = published
            elif d.action is DeliveryAction.EDIT_LIVE:
                message_id = await self._edit_live(d, content, pace, earlier)
            elif d.action is DeliveryAction.CHART:
                message_id = await self._show_chart(d, content, pace, earlier)
            elif d.action is DeliveryAction.REPLY:
                apart = self.adapter.charts_apart  # then the chart follows as a step of its own
                chart = None if apart else await self.charts.for_delivery(d, content, where(d))
                placed = await self.places.reply(
                    d, content, key_of(d), pace, chart, lambda x: self._find(x, check)
                )
                message_id = placed.message_id
                if apart and self.charts.wanted(d, content) and not placed.charted:
                    then = chart_step(
                        d, message_id, key_of(d), self.clock.now(), thread=placed.thread
                    )
            elif self.adapter.charts_apart:  # the chart follows as a step of its own
                message_id = await self.adapter.post(
                    self._to(d), content, key=key_of(d), pace=pace, earlier=earlier
                )
                shown = earlier is not None and earlier.with_attachment
                direct = d.action is DeliveryAction.DIRECT  # a DM goes without its chart
                if self.charts.wanted(d, content) and not shown and not direct:
                    then = chart_step(d, message_id, key_of(d), self.clock.now())
            else:
                chart = await self.charts.for_delivery(d, content, where(d))
                message_id = await self.adapter.post(
                    self._to(d), content, key=key_of(d), pace=pace, attachment=chart,
                    earlier=earlier,
                )  # fmt: skip
            if then is None:  # a call or a final a publishing subscription posted: publish it
                then = await self.publishing.step_after(d, content, message_id)
        except TransientDeliveryError as exc:
            await self._retry(d, exc)
            return False
        except DeliveryCancelled:
            raise
        except ChannelMoved as exc:  # d, its channel's subscriptions and deliveries move there
            async with self.db.begin() as conn:
                await follow(conn, d, exc, at=self.clock.now())
            return False  # the rest of the old channel's batch: moved too, claimed anew
        except DeliveryError as exc:
            if await self._give_up(d, exc) and d.subscription_id is not None:
                check.unfollowed.add(d.subscription_id)
            return True
        await self._sent(d, message_id, then)
        return True

    def _to(self, d: Delivery) -> ChannelRef:
        """Where ``d`` is posted: its channel; a follower's DM of a count not public, from a
        follow made in the count's own place, names the person as ``member`` (read with the
        claim: ``Delivery.member``; the adapter asks the platform whether they still are one,
        and refuses the post for good if not: they are unfollowed, ``_give_up_direct``)."""
        return d.channel if d.member is None else replace(d.channel, member=d.member)

    async def _show_chart(
        self, d: Delivery, content: Outgoing, pace: DeliveryPace, earlier: Earlier | None
    ) -> str:
        """Show the chart of a ``CHART`` step with its message, unless an earlier attempt did;
        the message's id."""
        step = ChartStep.of(d)
        if earlier is not None:
            return step.on
        chart = await self.charts.for_delivery(d, content, where(d))
        if chart is not None:
            await self.adapter.show_chart(step.place(d), step.on, content, chart, pace=pace)
        return step.on

    async def _find(self, d: Delivery, check: ChannelCheck) -> Earlier | None:
        """Where an earlier attempt of ``d`` posted it, in its channel or its thread."""
        if d.channel.thread is None:
            return await check.earlier(d)
        if not self.needs_check(d) or d.sending_at is None:
            return None
        self.stats.checks += 1
        async with check.progress.repairing():
            found = await self.adapter.find_posted(
                d.channel,
                [looked_for(d)],
                since=d.sending_at,
                pace=DeliveryPace(self.pacer, progress=check.progress),
            )
        earlier = found.get(looked_for(d))
        if d.action is DeliveryAction.CHART and earlier is not None:
            return earlier if earlier.with_attachment else None  # the message, not its chart
        return earlier

    async def tell(self, d: Delivery, text: str) -> None:
        """Tell the admins of ``d``'s count something about its subscription (a thread
        renewed, ...)."""
        async with self.db.begin() as conn:
            targets = await place_alerts.targets(conn, d.count_id, self.alert_channels)
            await outbox.enqueue(conn, self._alerts(d, text, targets))
        self.alerted({c.platform for c in targets})

    async def _note_attempt(self, d: Delivery) -> bool:
        return await self.notes(d.id)

    async def _write_notes(self, conn: AsyncConnection, ids: list[int]) -> list[bool]:
        may = await outbox.mark_attempts(conn, ids, at=self.clock.now(), by=self.claimant)
        return [i in may for i in ids]

    async def _write_records(
        self, conn: AsyncConnection, sent: list[tuple[int, str]]
    ) -> list[Exception | None]:
        failed = await outbox.mark_sent_many(conn, dict(sent), at=self.clock.now())
        return [failed.get(i) for i, _ in sent]

    async def _unnote_attempt(self, d: Delivery) -> bool:
        async with self.db.begin() as conn:
            return await outbox.unmark_attempt(conn, d.id, by=self.claimant)

    async def _edit_live(
        self, d: Delivery, content: Outgoing, pace: DeliveryPace, earlier: Earlier | None
    ) -> str:
        assert d.subscription_id is not None
        sub = await self.places.subscription(d)
        if earlier is not None:  # an earlier attempt posted a new scoreboard
            message_id = earlier.message_id
        else:
            if sub.live_message_id:
                try:
                    await self.adapter.edit(d.channel, sub.live_message_id, content, pace=pace)
                    await self.places.scoreboard(d, sub, sub.live_message_id, content, new=False)
                    return sub.live_message_id
                except MessageGone:
                    pass  # deleted or too old to edit: post a new scoreboard below
            message_id = await self.adapter.post(d.channel, content, key=key_of(d), pace=pace)
        await self.places.scoreboard(d, sub, message_id, content, new=True)
        async with self.db.begin() as conn:
            if await sub_rows.get(conn, d.subscription_id) is None:
                log.info("the scoreboard went out as its subscription was removed", extra=where(d))
            else:
                await sub_rows.set_live_message(conn, d.subscription_id, message_id)
        return message_id

    async def _sent(self, d: Delivery, message_id: str, then: NewDelivery | None = None) -> None:
        """Record ``d`` as sent and, in the same transaction, queue what follows it (the step
        that shows its chart); with nothing to follow, together with the others sent meanwhile
        (``records``)."""
        if then is None:
            await self.records((d.id, message_id))
        else:
            async with self.db.begin() as conn:
                await outbox.mark_sent(
                    conn, d.id, platform_message_id=message_id, at=self.clock.now()
                )
                await outbox.enqueue(conn, [then])
        what = {
            DeliveryAction.EDIT_LIVE: "edited",
            DeliveryAction.CHART: "charted",
            DeliveryAction.PUBLISH: "published",
        }
        outcome = what.get(d.action, "sent")
        if outcome == "edited":
            self.stats.edited += 1
        elif outcome == "charted":
            self.stats.charts += 1
        elif outcome == "published":
            self.stats.published += 1
        else:
            self.stats.sent += 1
        self.outcome(d, outcome)
        latency = (self.clock.now() - d.created_at).total_seconds()
        self.metrics.delivered(d.channel.platform, d.action.value, latency)
        # One line per fan-out says how it went (bot.delivery.worker.fanout): each post is debug.
        level = logging.INFO if d.action is DeliveryAction.ALERT else logging.DEBUG
        if log.isEnabledFor(level):  # its ``extra`` is made for nothing otherwise
            log.log(level, "delivered after %.1f s", latency, extra=where(d))

    async def _retry(self, d: Delivery, exc: TransientDeliveryError) -> None:
        limited = isinstance(exc, RateLimited)
        attempt = d.attempts + (0 if limited else 1)
        if attempt >= self.max_attempts:
            await self._give_up(d, exc)
            return
        delay = backoff(max(attempt, 1), base=1.0, cap=120.0, rng=self.rng)
        if exc.retry_after is not None:
            delay = exc.retry_after if limited else max(delay, exc.retry_after)
        async with self.db.begin() as conn:
            kept = await outbox.mark_retry(
                conn,
                d.id,
                error=str(exc),
                next_attempt_at=self.clock.now() + timedelta(seconds=delay),
                counted=not limited,
            )
        if not kept:
            self.stats.cancelled += 1
            self.outcome(d, "cancelled")
            log.info("dropped, its subscription was removed: %s", exc, extra=where(d))
            return
        self.metrics.retried(d.channel.platform)
        if limited:
            self.stats.rate_limited += 1
            self.outcome(d, "rate_limited")
            log.debug("rate limited, going again in %.1f s: %s", delay, exc, extra=where(d))
            return
        self.stats.retried += 1
        self.outcome(d, "retried")
        log.warning(
            "delivery failed (attempt %d), retrying in %.1f s: %s", attempt, delay, exc,
            extra=where(d),
        )  # fmt: skip

    async def _give_up(self, d: Delivery, exc: DeliveryError) -> bool:
        """``d`` is DEAD; whether its follower was unfollowed for it (a DM)."""
        permanent = isinstance(exc, PermanentDeliveryError)
        if d.action is DeliveryAction.DIRECT:
            return await self._give_up_direct(d, exc, permanent=permanent)
        async with self.db.begin() as conn:
            if not await outbox.mark_dead(conn, d.id, error=str(exc)):
                self.stats.cancelled += 1
                self.outcome(d, "cancelled")
                log.info("dropped, its subscription was removed: %s", exc, extra=where(d))
                return False
            sub = d.subscription_id
            if permanent and sub is not None and await sub_rows.get(conn, sub) is not None:
                await sub_rows.disable(conn, sub, str(exc))  # and cancels its other deliveries
                self.stats.disabled += 1
            targets: tuple[ChannelRef, ...] = ()
            if d.action is not DeliveryAction.ALERT:
                targets = await place_alerts.targets(conn, d.count_id, self.alert_channels)
            if targets and isinstance(exc, PermanentDeliveryError) and group_of(d, exc):
                await queue_stopped(conn, d, exc, targets, now=self.clock.now(), by=self._by())
            elif targets:
                what = "stopped posting" if permanent else "gave up on a message"
                fix = ". Fix the channel or permissions, then subscribe again." if permanent else ""
                text = f"tallybot {what} for {d.count_id} in {d.channel}: {exc}{fix}"
                await outbox.enqueue(conn, self._alerts(d, text, targets))
        self.stats.dead += 1
        self.outcome(d, "dead")
        self.metrics.failed(d.channel.platform)
        log.error("delivery gave up: %s", exc, extra=where(d))
        self.alerted({c.platform for c in targets})
        return False

    async def _give_up_direct(self, d: Delivery, exc: DeliveryError, *, permanent: bool) -> bool:
        """A direct message that cannot go out: the person blocked the bot, shares no server
        with it any more, was deactivated, or left the place whose private count it is
        (``_to``) (permanent): they are unfollowed, once, with one
        log line and an audit entry (an action on their behalf); their other open messages are
        cancelled with the follow (those the courier has in hand are dropped unattempted:
        ``ChannelCheck.unfollowed``). Nobody else is told: following is the person's business.
        Whether they were unfollowed now."""
        async with self.db.begin() as conn:
            if not await outbox.mark_dead(conn, d.id, error=str(exc)):
                self.stats.cancelled += 1
                self.outcome(d, "cancelled")
                return False
            made = await follow_rows.get(conn, d.subscription_id or 0)
            unfollowed = (
                permanent
                and made is not None
                and await follow_rows.drop(conn, made, at=self.clock.now(), why=str(exc))
            )
        self.stats.dead += 1
        self.outcome(d, "dead")
        self.metrics.failed(d.channel.platform)
        if permanent and made is not None:
            log.warning("unfollowed %s:%s: %s", made.platform, made.user_id, exc, extra=where(d))
        else:
            log.error("direct message gave up: %s", exc, extra=where(d))
        return unfollowed

    def _by(self) -> str:
        return f" (instance {self.instance})" if self.instance is not None else ""

    def _alerts(self, d: Delivery, text: str, targets: Sequence[ChannelRef]) -> list[NewDelivery]:
        notice = Notice(f"{text}{self._by()}", d.count_id)
        return [
            NewDelivery(
                subscription_id=None,
                channel=channel,
                count_id=d.count_id,
                tally_seq=d.tally_seq,
                action=DeliveryAction.ALERT,
                significant=True,
                payload=notice.to_json(),
                created_at=self.clock.now(),
            )
            for channel in targets
        ]
