"""The dispatcher drains the outbox into the adapters: paced, coalesced, retried, never doubled.

For each platform: take the deliveries that are due, drop the routine ones that a newer message
for the same channel already covers (``coalesce``), then send channel by channel, in order
within a channel and concurrently across channels, each request waiting for its slot under the
platform's global limit and the channel's own. Every delivery is marked SENDING before it goes
out and SENT (with the platform's message id) after; a crash in between leaves it SENDING, and
on start those go out again with the same idempotency key, so the platform (Discord's nonce) or
the adapter (Slack's metadata check) drops the copy.

Transient failures are retried with jittered exponential backoff that honours Retry-After, up to
``max_attempts``; permanent ones (channel gone, permission lost) disable the subscription and
tell the admins. Nothing is retried forever: what gave up is DEAD and listed for admins.

The final message of a count goes out with its chart: for a POST of a final ``Message`` the
chart of the count's history up to that update is drawn (through the ``ChartCache`` shared with
the commands, so N channels cost one render) and handed to ``Adapter.post`` as an attachment,
which the adapter shows as part of the same delivery. Drawing happens before the delivery takes
its rate slot. A chart that cannot be drawn (an error, or longer than ``chart_timeout``) is left
out and the log says why: the final message itself always goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import defaultdict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta

from bot.adapter import Adapter, Attachment, Notice, Outgoing
from bot.chart import CHART_TALLIES, ChartCache, chart_attachment
from bot.clock import Clock
from bot.errors import DeliveryError, MessageGone, PermanentDeliveryError, TransientDeliveryError
from bot.message import Message
from bot.ops.hooks import NO_HOOKS, Hooks
from bot.ratelimit import RateLimiter, Sleep
from bot.retry import backoff
from bot.store import Database, outbox
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import Delivery, DeliveryAction, NewDelivery
from bot.subscription import ChannelRef, Platform

BATCH = 5000
CHART_TIMEOUT_S = 30.0
"""How long a final message waits for its chart to be drawn before it goes without it."""

log = logging.getLogger(__name__)


def _where(d: Delivery) -> dict[str, object]:
    """What every delivery log line carries (``extra=``)."""
    return {
        "count": d.count_id,
        "platform": d.channel.platform.value,
        "channel": f"{d.channel.workspace}/{d.channel.channel}",
        "delivery": d.id,
        "action": d.action.value,
    }


def coalesce(due: Sequence[Delivery]) -> tuple[list[Delivery], list[Delivery]]:
    """Split due deliveries into those to send and those a newer one makes pointless.

    A routine post is dropped when a newer post (routine or significant) for the same
    subscription is also due: the newer one shows the latest state. A live-scoreboard edit is
    dropped when a newer edit of the same scoreboard is due. Significant posts and admin
    notices are never dropped, and a final tally is always significant.
    """
    newest_post: dict[int, int] = {}
    newest_edit: dict[int, int] = {}
    for d in due:
        if d.subscription_id is None:
            continue
        if d.action is DeliveryAction.POST:
            newest_post[d.subscription_id] = max(newest_post.get(d.subscription_id, 0), d.id)
        elif d.action is DeliveryAction.EDIT_LIVE:
            newest_edit[d.subscription_id] = max(newest_edit.get(d.subscription_id, 0), d.id)
    send: list[Delivery] = []
    drop: list[Delivery] = []
    for d in due:
        sub = d.subscription_id
        stale = sub is not None and (
            (d.action is DeliveryAction.POST and not d.significant and newest_post[sub] != d.id)
            or (d.action is DeliveryAction.EDIT_LIVE and newest_edit[sub] != d.id)
        )
        (drop if stale else send).append(d)
    return send, drop


@dataclass
class Stats:
    sent: int = 0
    edited: int = 0
    retried: int = 0
    dead: int = 0
    superseded: int = 0
    disabled: int = 0


class Dispatcher:
    def __init__(
        self,
        db: Database,
        adapters: Mapping[Platform, Adapter],
        clock: Clock,
        *,
        sleep: Sleep = asyncio.sleep,
        max_attempts: int = 8,
        alert_channels: Sequence[ChannelRef] = (),
        rng: random.Random | None = None,
        metrics: Hooks = NO_HOOKS,
        charts: ChartCache | None = None,
        chart_timeout: float = CHART_TIMEOUT_S,
    ) -> None:
        """``charts``: where the charts of final messages are drawn and kept (the cache the
        ``chart`` command uses too); without one, final messages go without a chart."""
        self.db = db
        self.charts = charts
        self._final_charts: dict[tuple[str, int | None], asyncio.Task[Attachment | None]] = {}
        """One drawing per final update, shared by every channel it goes to (the last few)."""
        self.chart_timeout = chart_timeout
        self.metrics = metrics
        self.adapters = dict(adapters)
        self.clock = clock
        self.sleep = sleep
        self.max_attempts = max_attempts
        self.alert_channels = tuple(alert_channels)
        self.rng = rng or random.Random()
        self.stats = Stats()
        self._wake = {p: asyncio.Event() for p in self.adapters}
        self._draining = {p: asyncio.Lock() for p in self.adapters}
        self._global = {
            p: RateLimiter(a.limits.requests.limit, a.limits.requests.seconds, clock)
            for p, a in self.adapters.items()
        }
        for p, limiter in self._global.items():
            limiter.note(self.adapters[p].limits.startup_requests)  # login, command sync, ...
        self._channel: dict[tuple[ChannelRef, DeliveryAction], RateLimiter] = {}
        self._edits = {
            p: RateLimiter(a.limits.edits.limit, a.limits.edits.seconds, clock)
            for p, a in self.adapters.items()
        }

    def wake(self, platforms: set[Platform]) -> None:
        for p in platforms:
            if p in self._wake:
                self._wake[p].set()

    async def recover(self) -> int:
        """After a restart: deliveries left SENDING by a crash go out again (same key)."""
        n = 0
        for platform in self.adapters:
            async with self.db.begin() as conn:
                doubtful = await outbox.in_doubt(conn, platform)
                if doubtful:
                    await outbox.release(conn, [d.id for d in doubtful])
                n += len(doubtful)
        return n

    async def run(self) -> None:
        """Drain every platform until cancelled."""
        await self.recover()
        async with asyncio.TaskGroup() as group:
            for platform in self.adapters:
                group.create_task(self._run_platform(platform))

    async def _run_platform(self, platform: Platform) -> None:
        wake = self._wake[platform]
        while True:
            wake.clear()
            await self.drain(platform)
            wait = await self._next_due_in(platform)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), timeout=wait)

    async def _next_due_in(self, platform: Platform) -> float | None:
        async with self.db.connect() as conn:
            at = await outbox.next_due(conn, platform)
        if at is None:
            return None
        return max(0.05, (at - self.clock.now()).total_seconds())

    async def drain(self, platform: Platform) -> int:
        """Send everything due now on ``platform``; return how many deliveries were handled."""
        async with self._draining[platform]:
            return await self._drain(platform)

    async def _drain(self, platform: Platform) -> int:
        now = self.clock.now()
        async with self.db.begin() as conn:
            due = await outbox.due(conn, platform, now=now, limit=BATCH)
            waiting = await outbox.waiting_channels(conn, platform, now=now)
            due = [d for d in due if d.channel not in waiting]  # keep each channel in order
            send, drop = coalesce(due)
            if drop:
                await outbox.supersede(conn, [d.id for d in drop])
            if send:
                await outbox.mark_sending(conn, [d.id for d in send])
        self.stats.superseded += len(drop)
        by_channel: dict[ChannelRef, list[Delivery]] = defaultdict(list)
        for d in send:
            by_channel[d.channel].append(d)
        # A TaskGroup, not gather: on cancellation (shutdown) it waits for every channel's task
        # to finish, so none is left running against a store that is being closed.
        async with asyncio.TaskGroup() as group:
            for items in by_channel.values():
                group.create_task(self._send_channel(items))
        return len(due)

    async def _send_channel(self, items: list[Delivery]) -> None:
        """Send one channel's deliveries in order; stop at the first that must wait."""
        for i, d in enumerate(items):
            ok = await self._deliver(d)
            if not ok:
                rest = [x.id for x in items[i + 1 :]]
                if rest:
                    async with self.db.begin() as conn:
                        await outbox.release(conn, rest)
                return

    def _channel_limiter(self, d: Delivery) -> RateLimiter:
        adapter = self.adapters[d.channel.platform]
        editing = d.action is DeliveryAction.EDIT_LIVE
        key = (d.channel, DeliveryAction.EDIT_LIVE if editing else DeliveryAction.POST)
        limiter = self._channel.get(key)
        if limiter is None:
            w = adapter.limits.edits if editing else adapter.limits.channel_posts
            limiter = self._channel[key] = RateLimiter(w.limit, w.seconds, self.clock)
        return limiter

    async def _attempt(self, d: Delivery) -> None:
        """Durably note that ``d`` is going out now, before it does (see outbox.mark_attempt)."""
        async with self.db.begin() as conn:
            await outbox.mark_attempt(conn, d.id, at=self.clock.now())

    @contextlib.asynccontextmanager
    async def _sending(self, d: Delivery, *, edit: bool) -> AsyncIterator[None]:
        """Wait for the channel's (or the platform's edit) slot, then the platform's; note the
        attempt; run the request in the block. Each slot counts from the request's end."""
        platform = d.channel.platform
        if edit and not self.adapters[platform].limits.edits_per_channel:
            own = self._edits[platform]
        else:
            own = self._channel_limiter(d)
        async with own.slot(self.sleep):
            await self._attempt(d)  # noted before the turn: a store write is no request
            async with self._global[platform].slot(self.sleep):
                yield

    async def _deliver(self, d: Delivery) -> bool:
        """Send one delivery and record the result; False when the channel must wait."""
        adapter = self.adapters[d.channel.platform]
        content: Outgoing = (
            Notice.from_json(d.payload)
            if d.action is DeliveryAction.ALERT
            else Message.from_json(d.payload)
        )
        key = f"tb{d.id}"
        chart = await self._chart_for(d, content)  # before the slot: drawing is no request
        try:
            if d.action is DeliveryAction.EDIT_LIVE:
                message_id = await self._edit_live(adapter, d, content, key)
            else:
                async with self._sending(d, edit=False):
                    message_id = await adapter.post(
                        d.channel, content, key=key, maybe_sent=_maybe_sent(d), attachment=chart
                    )
        except TransientDeliveryError as exc:
            await self._retry(d, exc)
            return False
        except (PermanentDeliveryError, DeliveryError) as exc:
            await self._give_up(d, exc)
            return True
        async with self.db.begin() as conn:
            await outbox.mark_sent(conn, d.id, platform_message_id=message_id, at=self.clock.now())
        if d.action is DeliveryAction.EDIT_LIVE:
            self.stats.edited += 1
        else:
            self.stats.sent += 1
        latency = (self.clock.now() - d.created_at).total_seconds()
        self.metrics.delivered(d.channel.platform.value, d.action.value, latency)
        log.info("delivered after %.1f s", latency, extra=_where(d))
        return True

    async def _chart_for(self, d: Delivery, content: Outgoing) -> Attachment | None:
        """The chart that goes with a POST of a count's final message (None for anything else).

        Drawn from the count's history up to the message's update. Any failure only leaves the
        chart out: it is logged with the reason, and the message goes without it."""
        if (
            self.charts is None
            or d.action is not DeliveryAction.POST
            or not isinstance(content, Message)
            or not content.final
        ):
            return None
        key = (d.count_id, d.tally_seq)
        task = self._final_charts.get(key)
        if task is None or task.cancelled():
            task = asyncio.create_task(self._draw_final_chart(d), name=f"chart {key}")
            self._final_charts[key] = task
            while len(self._final_charts) > 8:
                del self._final_charts[next(iter(self._final_charts))]
        return await task  # no shield: shutting down cancels the drawing with the senders

    async def _draw_final_chart(self, d: Delivery) -> Attachment | None:
        assert self.charts is not None
        try:
            async with self.db.connect() as conn:
                count = await count_rows.get(conn, d.count_id)
                history = await tally_rows.history(
                    conn, d.count_id, limit=CHART_TALLIES, through=d.tally_seq
                )
            if count is None:
                raise LookupError(f"count {d.count_id!r} is not in the store")
            async with asyncio.timeout(self.chart_timeout):
                return await chart_attachment(count, history, cache=self.charts)
        except TimeoutError:
            log.warning(
                "the final message goes without its chart: not drawn within %g s",
                self.chart_timeout,
                extra=_where(d),
            )
        except Exception as exc:
            log.warning(
                "the final message goes without its chart: %s: %s", type(exc).__name__, exc,
                exc_info=exc, extra=_where(d),
            )  # fmt: skip
        return None

    async def _edit_live(self, adapter: Adapter, d: Delivery, content: Outgoing, key: str) -> str:
        assert d.subscription_id is not None
        async with self.db.connect() as conn:
            sub = await sub_rows.get(conn, d.subscription_id)
        if sub is not None and sub.live_message_id:
            try:
                async with self._sending(d, edit=True):
                    await adapter.edit(d.channel, sub.live_message_id, content)
                return sub.live_message_id
            except MessageGone:
                pass  # deleted or too old to edit: post a new scoreboard below
        async with self._sending(d, edit=False):
            message_id = await adapter.post(d.channel, content, key=key, maybe_sent=_maybe_sent(d))
        async with self.db.begin() as conn:
            await sub_rows.set_live_message(conn, d.subscription_id, message_id)
        return message_id

    async def _retry(self, d: Delivery, exc: TransientDeliveryError) -> None:
        attempt = d.attempts + 1
        if attempt >= self.max_attempts:
            await self._give_up(d, exc)
            return
        delay = backoff(attempt, base=1.0, cap=120.0, rng=self.rng)
        if exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        async with self.db.begin() as conn:
            await outbox.mark_retry(
                conn,
                d.id,
                error=str(exc),
                next_attempt_at=self.clock.now() + timedelta(seconds=delay),
            )
        self.stats.retried += 1
        self.metrics.retried(d.channel.platform.value)
        log.warning(
            "delivery failed (attempt %d), retrying in %.1f s: %s", attempt, delay, exc,
            extra=_where(d),
        )  # fmt: skip

    async def _give_up(self, d: Delivery, exc: DeliveryError) -> None:
        permanent = isinstance(exc, PermanentDeliveryError)
        async with self.db.begin() as conn:
            await outbox.mark_dead(conn, d.id, error=str(exc))
            if permanent and d.subscription_id is not None:
                await sub_rows.disable(conn, d.subscription_id, str(exc))
                self.stats.disabled += 1
            if d.action is not DeliveryAction.ALERT and self.alert_channels:
                what = "stopped posting" if permanent else "gave up on a message"
                notice = Notice(
                    f"tallybot {what} for {d.count_id} in {d.channel}: {exc}"
                    + (
                        ". Fix the channel or permissions, then subscribe again."
                        if permanent
                        else ""
                    ),
                    d.count_id,
                )
                await outbox.enqueue(
                    conn,
                    [
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
                        for channel in self.alert_channels
                    ],
                )
        self.stats.dead += 1
        self.metrics.failed(d.channel.platform.value)
        log.error("delivery gave up: %s", exc, extra=_where(d))
        self.wake({c.platform for c in self.alert_channels})


def _maybe_sent(d: Delivery) -> bool:
    """An earlier attempt failed, or was claimed and never recorded (a crash)."""
    return d.attempts > 0 or d.sending_at is not None
