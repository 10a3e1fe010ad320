"""The dispatcher drains the outbox into the adapters: paced, coalesced, retried, never doubled.

For each platform a worker loop takes the deliveries that are due, drops those whose
subscription is gone (CANCELLED, logged, never sent) and the routine ones that a newer message
for the same channel already covers (``coalesce``), then sends channel by channel, in order
within a channel and concurrently across channels: each channel is a task of its own, and the
worker claims more while channels are being sent, so a channel that is slow (repairing, waiting
for its own bucket, not answered) holds up no other, within a bound on the work in hand. How
one delivery is confirmed, sent and recorded is :mod:`bot.delivery.courier`; every request
waits for its slots under the platform's limits (:mod:`bot.delivery.pacing`).

Every delivery is claimed (SENDING) before it is worked on; right before a request that could
post it goes out, the attempt is noted. A crash in between leaves it SENDING: on start those go
back to the queue (``recover``), and the ones whose request may have gone out are confirmed
from their channel before they are sent again (or resent with the same key while the platform
itself still drops the copy: Discord's nonce).

The worker loop is supervised: if it ever ends (the store failed while recording an outcome)
the failure is logged, the platform counts as down for ``/readyz`` (``problems``) with the
reason, and the loop starts again after a backoff, first putting back what it left claimed.
One info line per fan-out (the deliveries of one update on one platform) says how it went.
On a shared store only the holder of a platform's rate budget lease (``bot.delivery.shared``)
claims and sends its deliveries; it puts a dead instance's expired claims back to the queue
while it drains, not only when a drain starts."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.base.clock import Clock, Sleep
from bot.base.memory import give_back
from bot.base.retry import backoff
from bot.charts.chart import ChartCache
from bot.cluster.identity import new_instance_id
from bot.cluster.lease import shared
from bot.delivery.adapter import Adapter
from bot.delivery.attempt import Progress, Stats, where
from bot.delivery.courier import ChannelCheck, Courier
from bot.delivery.final_charts import CHART_TIMEOUT_S, FinalCharts
from bot.delivery.pacing import Pacer
from bot.delivery.shared import PlatformBudget
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import StoreError
from bot.ops.hooks import NO_HOOKS, Hooks
from bot.store import Database, outbox
from bot.store.outbox import Delivery, DeliveryAction

# Fan-outs as the logs tell them: what became of the deliveries of one update on one platform
# (sent, edited, given up, cancelled, superseded, retried, rate limited), and one info line per
# fan-out once nothing of it is left to send (logger ``bot.delivery.worker.fanout``).

summary = logging.getLogger("bot.delivery.worker.fanout")
"""One line per finished fan-out (the per-delivery lines are debug)."""


@dataclass
class Fanout:
    """What became of the deliveries of one update on one platform, for its summary line."""

    started: float
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class Fanouts:
    """The fan-outs under way, by platform, count and update."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self._fanouts: dict[tuple[Platform, str, int | None], Fanout] = {}

    def of(self, d: Delivery) -> Fanout | None:
        """The fan-out ``d`` belongs to (None for an alert to admins: not part of one)."""
        if d.action is DeliveryAction.ALERT:
            return None
        key = (d.channel.platform, d.count_id, d.tally_seq)
        fanout = self._fanouts.get(key)
        if fanout is None:
            fanout = self._fanouts[key] = Fanout(self.clock.monotonic())
        return fanout

    def outcome(self, d: Delivery, what: str) -> None:
        fanout = self.of(d)
        if fanout is not None:
            fanout.outcomes[what] += 1

    async def summarise(self, platform: Platform) -> None:
        """One info line for each fan-out on ``platform`` that has nothing left to send."""
        if not any(k[0] == platform for k in self._fanouts):
            return
        async with self.db.connect() as conn:
            still = await outbox.open_updates(conn, platform)
        for key in [k for k in self._fanouts if k[0] == platform and k[1:] not in still]:
            fanout = self._fanouts.pop(key)
            _, count_id, seq = key
            o = fanout.outcomes
            took = self.clock.monotonic() - fanout.started
            summary.info(
                "fan-out of %s update #%s to %s done in %.1f s: %d sent, %d edited, %d gave up, "
                "%d cancelled, %d superseded; %d retries, %d rate limited",
                count_id, seq, platform, took, o["sent"], o["edited"], o["dead"],
                o["cancelled"], o["superseded"], o["retried"], o["rate_limited"],
                extra={"count": count_id, "platform": platform},
            )  # fmt: skip


# Which due deliveries are worth sending: a newer message for the same channel may cover them.

POSTS = (DeliveryAction.POST, DeliveryAction.REPLY)
"""New messages (in the channel, or in a subscription's thread): the latest routine one wins."""


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
        if d.action in POSTS:
            newest_post[d.subscription_id] = max(newest_post.get(d.subscription_id, 0), d.id)
        elif d.action is DeliveryAction.EDIT_LIVE:
            newest_edit[d.subscription_id] = max(newest_edit.get(d.subscription_id, 0), d.id)
    send: list[Delivery] = []
    drop: list[Delivery] = []
    for d in due:
        sub = d.subscription_id
        stale = sub is not None and (
            (d.action in POSTS and not d.significant and newest_post[sub] != d.id)
            or (d.action is DeliveryAction.EDIT_LIVE and newest_edit[sub] != d.id)
        )
        (drop if stale else send).append(d)
    return send, drop


BATCH = 5000
"""Channels in hand at most, slow ones included."""
FIRST_BATCH = 50
"""On a store shared by several instances (PostgreSQL), the first claim of a drain: small, so
that the first requests go out at once. The next claims, made while the previous ones are being
sent, keep at most ``AHEAD`` fast channels' deliveries in hand, claiming more when ``REFILL``
are left (the memory of a fan-out does not grow with its size)."""
AHEAD = 250
REFILL = 100
SLOW_S = 5.0
"""A channel whose request has not answered for this long is slow (``Progress``): it no longer
counts against the room of the fast ones."""
DIRECT_AHEAD = 100
"""Followers' DM channels in hand at most (``DeliveryAction.DIRECT``): two seconds of Discord's
global budget, so that a fan-out to thousands of followers keeps the pipe full without taking
the room of channels' posts queued after it (they are claimed first, see ``outbox.claimable``).
More are claimed once half of them are done: about one claim per 50 DMs."""
CLAIM_EVERY_S = 0.25
"""While DMs are in hand, how often the worker looks for channels' posts queued meanwhile (not
at every DM sent: that would be a claim per DM)."""
RESCAN_S = 1.0
"""On a shared store, how often an idle worker looks for work queued by other instances (and for
claims that expired)."""
RESTART_CAP_S = 60.0  # the longest wait before a stopped worker loop starts again

log = logging.getLogger(__name__)

__all__ = ["CHART_TIMEOUT_S", "Dispatcher", "Stats", "coalesce"]


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
        instance: str | None = None,
        claim_seconds: float = 30.0,
    ) -> None:
        """``charts``: where the charts of final messages are drawn and kept (the cache the
        ``chart`` command uses too); without one, final messages go without a chart.
        ``instance``: this instance's id (named in admin notices), whose claims on deliveries
        last ``claim_seconds`` unless renewed (``bot.store.outbox.claims``)."""
        self.db = db
        self.instance = instance
        self.claimant = instance or new_instance_id()
        """Whose claims this dispatcher's are."""
        self.claim_seconds = claim_seconds
        self.shared = shared(db)
        """Whether other instances may share the store (PostgreSQL)."""
        self.adapters = dict(adapters)
        self.clock = clock
        self.sleep = sleep
        self.rng = rng or random.Random()
        self.stats = Stats()
        self.fanouts = Fanouts(db, clock)
        self.charts = FinalCharts(db, charts, timeout=chart_timeout)
        self.budgets = {
            p: PlatformBudget(db, p, a, self.claimant, clock, sleep, seconds=claim_seconds)
            for p, a in self.adapters.items()
            if self.shared
        }
        """Per platform, its rate budget, leased to one instance at a time: only its holder
        claims and sends the platform's deliveries (``bot.delivery.shared``)."""
        self.pacers = {
            p: Pacer(a.limits, clock, sleep, self.budgets[p].buckets if self.shared else {})
            for p, a in self.adapters.items()
        }
        for p, a in self.adapters.items():
            a.watch_limits(self.pacers[p].said)
        self._couriers = {
            p: Courier(
                db,
                a,
                self.pacers[p],
                clock,
                charts=self.charts,
                stats=self.stats,
                metrics=metrics,
                outcome=self.fanouts.outcome,
                alerted=self.wake,
                alert_channels=alert_channels,
                max_attempts=max_attempts,
                rng=self.rng,
                instance=instance,
                claimant=self.claimant,
            )
            for p, a in self.adapters.items()
        }
        self._wake = {p: asyncio.Event() for p in self.adapters}
        self._draining = {p: asyncio.Lock() for p in self.adapters}
        self._down: dict[Platform, str] = {}
        self._recovered: set[Platform] = set()
        self._released: dict[Platform, float] = {}
        """When each platform's expired claims were last released (monotonic)."""
        self._running = False

    def wake(self, platforms: set[Platform]) -> None:
        for p in platforms:
            if p in self._wake:
                self._wake[p].set()

    def problems(self) -> dict[Platform, str]:
        """Why delivery is down, per platform (empty while every worker loop runs)."""
        if not self._running:
            return dict.fromkeys(self.adapters, "the dispatcher is not running")
        return dict(self._down)

    async def hand_back(self) -> None:
        """Hand every sending lease back (a clean stop)."""
        for budget in self.budgets.values():
            await budget.hand_back()

    async def recover(self, platform: Platform | None = None) -> int:
        """After a (re)start: deliveries left SENDING go back to the queue (those that may have
        gone out are confirmed from their channel before they go again). Done by the first
        drain of a platform anyway; never while a drain of it is sending."""
        n = 0
        for p in [platform] if platform is not None else list(self.adapters):
            async with self._draining[p]:
                n += await self._recover(p)
        return n

    async def _recover(self, platform: Platform) -> int:
        async with self.db.begin() as conn:
            if self.shared:  # only what is ours, or expired: never a live instance's sends
                doubtful = await outbox.in_doubt(
                    conn, platform, instance=self.claimant, now=self.clock.now()
                )
            else:
                doubtful = await outbox.in_doubt(conn, platform)
            if doubtful:
                await outbox.release(conn, [d.id for d in doubtful])
        self._recovered.add(platform)
        return len(doubtful)

    async def run(self) -> None:
        """Drain every platform until cancelled, each in a supervised worker loop."""
        self._running = True
        try:
            async with asyncio.TaskGroup() as group:
                for platform in self.adapters:
                    group.create_task(self._supervise(platform), name=f"deliver {platform}")
                if self.shared and self.adapters:
                    group.create_task(self._renew_claims(), name="renew claims")
        finally:
            self._running = False
            for courier in self._couriers.values():  # what was sent is recorded before closing
                await courier.aclose()

    async def _renew_claims(self) -> None:
        """Keep this instance's claims alive while it sends (a third of their life each time);
        a failure is logged and tried again at the next turn."""
        while True:
            await asyncio.sleep(self.claim_seconds / 3)
            for budget in self.budgets.values():
                await budget.lease.renew()
            try:  # on the connections kept apart: never behind the sends' statements
                async with self.db.begin_urgent() as conn:
                    await outbox.renew(conn, self.claimant, until=self._claim_until())
            except StoreError as exc:
                log.warning("could not renew the claims on deliveries: %s", exc)

    def _claim_until(self) -> datetime:
        return self.clock.now() + timedelta(seconds=self.claim_seconds)

    async def _supervise(self, platform: Platform) -> None:
        failures = 0
        while True:
            started = self.clock.monotonic()
            try:
                self._recovered.discard(platform)  # what the loop left claimed goes back
                await self.recover(platform)
                self._down.pop(platform, None)
                await self._run_platform(platform)
                reason = "the worker loop ended"
            except Exception as exc:
                reason = f"{type(exc).__name__}: {exc}"
                log.error("delivery to %s stopped: %s", platform, reason, exc_info=exc)
            if self.clock.monotonic() - started > RESTART_CAP_S:
                failures = 0  # it ran well for a while: start again quickly
            failures += 1
            delay = max(1.0, backoff(failures, base=1.0, cap=RESTART_CAP_S, rng=self.rng))
            self._down[platform] = f"{reason} (restarting in {delay:.0f} s)"
            log.warning("delivery to %s restarts in %.0f s", platform, delay)
            await self.sleep(delay)

    async def _run_platform(self, platform: Platform) -> None:
        wake = self._wake[platform]
        busy = False
        while True:
            wake.clear()
            if self.shared and not await self._may_send(platform):
                # Nothing to send, or another instance sends this platform's: stand by.
                await woken(wake, RESCAN_S)
                continue
            handled = await self.drain(platform)
            busy = busy or handled > 0
            if self.shared and handled:
                continue  # more may have come meanwhile
            wait = await self._next_due_in(platform)
            if self.shared:  # nothing to send now: another instance may take the budget
                await self.budgets[platform].hand_back()
            if busy:  # a fan-out ended: the memory it used goes back to the system
                give_back()
                busy = False
            await woken(wake, wait)

    async def _may_send(self, platform: Platform) -> bool:
        """Whether this instance holds the platform's sending lease, or took it now because
        deliveries are open; an idle one leaves it to whoever has something to send."""
        budget = self.budgets[platform]
        if budget.lease.held:
            return True
        async with self.db.connect() as conn:
            if not await outbox.depth(conn, platform):
                return False
        return await budget.leased(taken=self.pacers[platform].reset)  # from the setting

    async def _next_due_in(self, platform: Platform) -> float | None:
        async with self.db.connect() as conn:
            at = await outbox.next_due(conn, platform)
        if at is None:
            return RESCAN_S if self.shared else None
        wait = max(0.05, (at - self.clock.now()).total_seconds())
        return min(wait, RESCAN_S) if self.shared else wait

    async def drain(self, platform: Platform) -> int:
        """Send everything due now on ``platform``; return how many deliveries were handled."""
        async with self._draining[platform]:
            if platform not in self._recovered:
                await self._recover(platform)
            self._released.pop(platform, None)  # a drain starts by releasing expired claims
            handled = await self._drain(platform)
            await self.fanouts.summarise(platform)
            return handled

    async def _drain(self, platform: Platform) -> int:
        """Claim and send until nothing is due and nothing is in hand.

        Each channel's deliveries are sent by a task of their own, in order; channels do not
        wait for each other. Claims go on while channels are being sent, whenever the *fast*
        channels in hand are down to ``REFILL`` (a slow one, see ``Progress``, takes no room
        of theirs), up to ``AHEAD`` fast ones and ``BATCH`` in all."""
        courier = self._couriers[platform]
        wake = self._wake[platform]
        handled = 0
        first = True
        in_hand: dict[asyncio.Task[None], Progress] = {}
        direct: set[asyncio.Task[None]] = set()
        """The tasks of followers' DM channels among ``in_hand``."""
        claimed_at = float("-inf")
        dry = False
        """The last claim found fewer followers' DMs due than it had room for: the next looks
        for more only ``CLAIM_EVERY_S`` later (not at every DM sent, as the fan-out ends)."""

        def finished(task: asyncio.Task[None]) -> None:
            in_hand.pop(task, None)
            direct.discard(task)
            wake.set()

        try:
            # A TaskGroup: on cancellation (shutdown) it waits for every channel's task to finish.
            async with asyncio.TaskGroup() as group:
                while True:
                    wake.clear()
                    if self.shared:
                        await self._release_expired(platform)
                    fast_dm = sum(1 for t in direct if not in_hand[t].slow(SLOW_S))
                    fast = sum(1 for p in in_hand.values() if not p.slow(SLOW_S)) - fast_dm
                    may = first or not self.shared or self.budgets[platform].lease.held
                    room = min(AHEAD - fast, BATCH - len(in_hand))
                    # Followers' DM channels: refilled once half of those in hand are done, so
                    # that a claim takes dozens of them, not the one or two done since the last.
                    refill = fast_dm <= DIRECT_AHEAD // 2
                    dm_room = max(0, min(DIRECT_AHEAD - fast_dm, room)) if refill else 0
                    # DMs in hand: look for channels' posts now and then, not per DM sent (nor for
                    # more DMs, once a claim found fewer due than it had room for: ``dry``)
                    soon = fast_dm > 0 and self.clock.monotonic() - claimed_at < CLAIM_EVERY_S
                    due: list[Delivery] = []
                    limit = 0
                    more_dms = dm_room > 0 and not dry
                    if may and fast <= REFILL and room > 0 and (not soon or more_dms):
                        limit = min(room, FIRST_BATCH) if first and self.shared else room
                        first = False
                        claimed_at = self.clock.monotonic()
                        due, send = await self._claim(platform, limit, dm_room)
                        handled += len(due)
                        heads = {d.channel for d in due}
                        dms = {d.channel for d in due if d.action is DeliveryAction.DIRECT}
                        dry = len(dms) < dm_room and len(heads) < limit
                        by_channel: dict[ChannelRef, list[Delivery]] = defaultdict(list)
                        for d in send:
                            self.fanouts.of(d)  # it starts now, if it has not before
                            by_channel[d.channel].append(d)
                        for channel, items in by_channel.items():
                            progress = Progress(self.clock, wake.set)
                            check = courier.check_for(channel, items, progress)
                            task = group.create_task(self._send_channel(courier, items, check))
                            in_hand[task] = progress
                            if items[0].action is DeliveryAction.DIRECT:
                                direct.add(task)
                            task.add_done_callback(finished)
                    if due and len(due) >= limit:
                        continue  # more may be due at once
                    if not in_hand:
                        break
                    # Until a channel is done or turns slow, new work is queued, or a while passed
                    # (a retry may have come due, a request may have stopped answering).
                    await woken(wake, CLAIM_EVERY_S if direct else RESCAN_S)
        except ExceptionGroup as group_error:  # the store failed: say so, unwrapped
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        return handled

    async def _release_expired(self, platform: Platform) -> None:
        """A dead instance's deliveries back to the queue, confirmed before they go again: at
        the start of a drain and every third of a claim's life while it lasts, so that a
        takeover picks them up first (they are the oldest)."""
        now = self.clock.monotonic()
        if now < self._released.get(platform, float("-inf")) + self.claim_seconds / 3:
            return
        self._released[platform] = now
        async with self.db.begin() as conn:  # not this instance's own, being sent now
            expired = await outbox.release_expired(
                conn, platform, now=self.clock.now(), keep=self.claimant
            )
        if expired:
            log.info("took over %d deliveries whose claim expired", expired)

    async def _claim(
        self, platform: Platform, limit: int, dm_room: int = BATCH
    ) -> tuple[list[Delivery], list[Delivery]]:
        """Claim up to ``limit`` due deliveries (with those queued behind them), of at most
        ``dm_room`` followers' DM channels: all of them, and those to send (the others were
        cancelled or superseded here)."""
        now = self.clock.now()
        async with self.db.begin() as conn:
            due = await outbox.claimable(conn, platform, now=now, limit=limit, direct=dm_room)
            orphans = await outbox.cancel_orphans(conn, [d.id for d in due])
            send, drop = coalesce([d for d in due if d.id not in orphans])
            if drop:
                await outbox.supersede(conn, [d.id for d in drop])
            if send:
                await outbox.mark_sending(
                    conn, [d.id for d in send], by=self.claimant, until=self._claim_until()
                )
        for d in due:
            if d.id in orphans:
                self.fanouts.outcome(d, "cancelled")
                log.info("dropped, never sent: its subscription is gone", extra=where(d))
        self.stats.cancelled += len(orphans)
        self.stats.superseded += len(drop)
        for d in drop:
            self.fanouts.outcome(d, "superseded")
        return due, send

    async def _send_channel(
        self, courier: Courier, items: list[Delivery], check: ChannelCheck
    ) -> None:
        """Send one channel's deliveries in order; stop at the first that must wait."""
        for i, d in enumerate(items):
            if not await courier.deliver(d, check):
                rest = [x.id for x in items[i + 1 :]]
                if rest:
                    async with self.db.begin() as conn:
                        await outbox.release(conn, rest)
                return


async def woken(wake: asyncio.Event, within: float | None) -> None:
    """Until ``wake`` is set or ``within`` seconds have passed (None: until it is set).

    Not ``asyncio.wait_for``: on Python 3.11 it swallows a cancellation that comes in the turn
    of the loop ``wake`` is set in (CPython gh-86296); the worker loop, told to stop as a
    channel's task ended, went on, and once idle waited for ever, and the app's close with it.
    """
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(within):
            await wake.wait()
