"""The path every tally takes, polled, pushed or typed: detector -> formatter -> outbox.

``Pipeline.ingest`` does it all in one store transaction: lock the count's row and read its last
accepted tally under the lock (instances sharing a PostgreSQL store that ingest tallies of one
count take turns: each tally is weighed against the one stored just before it), detect what
changed, word the message, store the new tally with its headline (or the rejection and its
reason) and queue one delivery per subscribed channel that wants it. Nothing is sent here: the
dispatcher drains the outbox. So a crash can lose nothing that was accepted, and a restart
re-announces nothing. An accepted tally costs PostgreSQL six statements with subscribers (the
count locked, the last tally, the INSERT that also notifies the other instances, the
subscriptions, the followers, the deliveries; one more when the count's state changes), a
tally with no change two (``tests/runtime/test_ingest_cost.py``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.base.clock import Clock
from bot.domain import format as fmt
from bot.domain.detect import Accepted, Detection, NoChange, Rejected, detect
from bot.domain.message import Message, Notice
from bot.domain.model import OPERATOR, Count, CountStatus, Tally, TallyState
from bot.domain.schedule import note as schedule_note
from bot.domain.subscription import (
    CALL_EVENTS,
    LEAD_EVENTS,
    ChannelRef,
    Hear,
    Platform,
    Subscription,
)
from bot.errors import CommandError, Replayed
from bot.ops.hooks import NO_HOOKS, Hooks, count_label
from bot.store import Database, notices, outbox, place_alerts
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import follows as follow_rows
from bot.store import push_receipts as receipts
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.store.push_receipts import Receipt
from bot.web.public import PageLink, link_note, no_link

log = logging.getLogger(__name__)

STATUS_OF_STATE = {
    TallyState.COUNTING: CountStatus.COUNTING,
    TallyState.PAUSED: CountStatus.PAUSED,
    TallyState.FINAL: CountStatus.FINAL,
}


@dataclass(frozen=True, slots=True)
class Ingested:
    """What became of one tally."""

    detection: Detection
    tally: Tally
    """The tally as stored (with its seq) when accepted; as given otherwise."""
    previous: Tally | None
    message: Message | None = None
    queued: frozenset[Platform] = frozenset()
    """The platforms that have new deliveries because of it."""
    owner: str = OPERATOR
    """Whose count it is (``Count.owner``)."""

    @property
    def accepted(self) -> bool:
        return isinstance(self.detection, Accepted)


@dataclass(frozen=True, slots=True)
class Planned:
    """One delivery :func:`plan` asks for."""

    subscription: Subscription
    action: DeliveryAction
    message: Message
    """What it shows (with the subscription's ``mention`` on a call or the final)."""
    keep: bool
    """The delivery's ``significant``: a post never coalesced away (a significant update, or
    one a filter selected); for a scoreboard edit, whether the update is significant."""


def plan(subscriptions: Sequence[Subscription], message: Message) -> list[Planned]:
    """Which subscriptions get what for one message, by what each hears
    (:class:`~bot.domain.subscription.Wants`).

    ``live``: the scoreboard edited for every update. A post when any of what it hears takes
    the update: ``events`` a significant one, ``all`` every one, ``final`` the final result,
    ``calls`` a call made or withdrawn (and the final), ``leads`` a change of leader,
    ``close=`` every update while the margin is that close. A post a filter selected is never
    coalesced away; a routine one that only ``all`` took may be. The subscription's mention
    goes on its calls and its final only. With ``thread``, a post is a REPLY: it goes into the
    subscription's thread (``bot.delivery.places``). A subscription that follows an announcement
    channel (``via=``) gets nothing of its own: the platform copies what that channel publishes.
    """
    events = frozenset(message.events)
    call = message.final or bool(events & CALL_EVENTS)
    out: list[Planned] = []
    for sub in subscriptions:
        wants = sub.wants
        if wants.via is not None:
            continue
        if wants.live:
            out.append(Planned(sub, DeliveryAction.EDIT_LIVE, message, message.significant))
        picked = {
            Hear.FINAL: message.final,
            Hear.CALLS: call,
            Hear.LEADS: bool(events & LEAD_EVENTS),
        }
        filtered = any(picked[h] for h in wants.hears if h in picked)
        filtered |= wants.close is not None and wants.close.holds(*margin(message))
        wanted = filtered or (Hear.EVENTS in wants.hears and message.significant)
        if not (wanted or Hear.ALL in wants.hears):
            continue
        shown = message
        if wants.mention is not None and call:
            shown = replace(message, mention=wants.mention)
        keep = filtered or message.significant
        action = DeliveryAction.REPLY if wants.thread else DeliveryAction.POST
        out.append(Planned(sub, action, shown, keep))
    return out


def margin(message: Message) -> tuple[int, int]:
    """The leader's margin over the runner-up, and the valid votes, of ``message``."""
    votes = sorted((c.votes for c in message.choices), reverse=True)
    if len(votes) < 2:
        return 0, 0
    return votes[0] - votes[1], sum(votes)


class Pipeline:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        alert_channels: Sequence[ChannelRef] = (),
        on_queued: Callable[[set[Platform]], None] = lambda platforms: None,
        metrics: Hooks = NO_HOOKS,
        instance: str | None = None,
        on_accepted: Callable[[Tally], None] = lambda tally: None,
        page_link: PageLink = no_link,
    ) -> None:
        """``instance``: the id of this instance, named in every admin notice it queues.
        ``on_accepted``: told of every accepted tally (as stored, with its seq) once it is
        committed; it must return at once (the public pages' broadcaster, ``bot.web``). On
        PostgreSQL every instance also hears of it (:mod:`bot.store.notices`).
        ``page_link``: a public count's page, linked from its final message."""
        self.db = db
        self.on_accepted = on_accepted
        self.page_link = page_link
        self.metrics = metrics
        self.instance = instance
        self.clock = clock
        self.alert_channels = tuple(alert_channels)
        self.on_queued = on_queued
        self._locks: dict[str, asyncio.Lock] = {}

    def _lock(self, count_id: str) -> asyncio.Lock:
        return self._locks.setdefault(count_id, asyncio.Lock())

    async def ingest(
        self,
        tally: Tally,
        *,
        actor: str | None = None,
        action: str = "",
        receipt: Receipt | None = None,
    ) -> Ingested:
        """Detect, store and queue one tally. ``actor`` (an admin) gets an audit entry.

        ``receipt``: the tally came in a signed request, taken once (see
        :mod:`bot.store.push_receipts`). Seen before, it is :class:`~bot.errors.Replayed` unless
        its figures are the ones shown (a repeat of a request whose answer was lost: "no
        change"); nothing is stored and nobody alerted, and the refusal is audited.
        """
        final = tally.state is TallyState.FINAL
        link = await self.page_link(tally.count_id) if final else None  # before the transaction
        async with self._lock(tally.count_id):
            try:
                async with self.db.begin() as conn:
                    result = await self._ingest(conn, tally, receipt, link)
                    if actor is not None:
                        await audit_rows.record(conn, self._audit_entry(actor, action, result))
            except Replayed as exc:
                if actor is not None:
                    async with self.db.begin() as conn:
                        await audit_rows.record(conn, self._refusal(actor, action, tally, exc))
                raise
            self._told(result)
            return result

    def _told(self, result: Ingested) -> None:
        """Once committed: the dispatcher, the metrics and the public pages hear of it."""
        if result.queued:
            self.on_queued(set(result.queued))
        if isinstance(result.detection, Accepted):
            self.metrics.tally_accepted(count_label(result.owner, result.tally.count_id))
            self.on_accepted(result.tally)
        elif isinstance(result.detection, Rejected):
            label = count_label(result.owner, result.tally.count_id)
            self.metrics.tally_rejected(label, result.detection.reason.value)

    async def revise(
        self,
        was: Count,
        change: Callable[[AsyncConnection], Awaitable[None]],
        *,
        actor: str,
        source: str,
        correction: bool = False,
    ) -> Ingested | None:
        """Change a count's settings (``change`` writes them, and their audit entry) and, in the
        same transaction, weigh its last tally under them: when the edit changes a call, a
        runoff, a determinative state or the final result, or the ballots received, the last
        figures are published again under the new settings as a correction (``detect`` with
        ``was``; ``correction``: the edit was sent as one), audited with the figures before and
        after. None: nothing to publish again.
        A tally the new settings make impossible (more counted than received) refuses the whole
        edit (:class:`CommandError`), nothing changed."""
        link = await self.page_link(was.id) if was.status is CountStatus.FINAL else None
        async with self._lock(was.id):
            async with self.db.begin() as conn:
                await change(conn)
                count = await count_rows.lock(conn, was.id)  # the last tally read under it
                previous = await tally_rows.last(conn, was.id)
                if count is None or previous is None:
                    return None
                received = previous.received
                if count.received != was.received:
                    received = count.received
                again = replace(
                    previous,
                    received=received,
                    observed_at=self.clock.now(),
                    source=source,
                    correction=correction,
                    seq=0,
                    headline="",
                )
                result = await self._ingest(conn, again, link=link, was=was)
                if isinstance(result.detection, NoChange):
                    return None
                record = self._audit_entry(actor, "edit", result)
                if result.message is not None:
                    said = f"published again as update #{result.tally.seq}: "
                    record = replace(record, detail=said + result.message.headline)
                await audit_rows.record(conn, record)
            self._told(result)
            return result

    async def _ingest(
        self,
        conn: AsyncConnection,
        tally: Tally,
        receipt: Receipt | None = None,
        link: str | None = None,
        was: Count | None = None,
    ) -> Ingested:
        # The count's row locked first: another instance ingesting a tally of the same count
        # waits here until we commit, then reads our tally as the last (it is weighed against
        # the tally stored just before it, never an older one).
        count = await count_rows.lock(conn, tally.count_id)
        if count is None:
            raise CommandError(f"unknown count {tally.count_id!r}")
        # The receipt next: another instance taking the same request reads our tally below
        # once we have committed, and sees "no change".
        seen = None
        if receipt is not None:
            seen = await receipts.remember(conn, receipt, count.id, at=self.clock.now())
        previous = await tally_rows.last(conn, count.id)
        detection = detect(count, previous, tally, was=was)
        if was is not None and isinstance(detection, Rejected):
            raise CommandError(f"not changed: under the new settings {detection.detail}")
        if seen is not None and not isinstance(detection, NoChange):
            raise Replayed(
                f"this signed push was already received at {seen:%Y-%m-%d %H:%M:%S} UTC and "
                "its figures have changed since: a replay (sign each push anew; tallybot push "
                "does)"
            )
        if isinstance(detection, NoChange):
            return Ingested(detection, tally, previous, owner=count.owner)
        now = self.clock.now()
        if isinstance(detection, Rejected):
            await tally_rows.reject(
                conn, tally, reason=detection.reason.value, detail=detection.detail, at=now
            )
            notice = Notice(
                f"Rejected a tally for {count.id} from {tally.source}: {detection.detail}",
                count.id,
            )
            alerted = await self._alert(conn, notice, previous.seq if previous else 0)
            return Ingested(detection, tally, previous, queued=alerted, owner=count.owner)
        # Worded before it is stored (its seq follows the last's, under the lock), so that one
        # INSERT keeps it with the headline it is published with.
        seq = previous.seq + 1 if previous else 1
        accepted = replace(detection, tally=tally.with_seq(seq))
        message = fmt.for_update(count, accepted, previous.seq if previous else None, previous)
        if link is not None and message.final:
            message = replace(message, notes=(*message.notes, link_note(link)))
        if tally.state is TallyState.PAUSED:  # "The count resumes at 9:00 (in 10 hours)."
            ahead = await schedule_rows.get(conn, count.id)
            said = None if ahead is None else schedule_note(ahead, self.clock.now())
            message = message if said is None else replace(message, notes=(*message.notes, said))
        announced = notices.announcement(conn, self.db.schema, count.id, seq)  # at commit
        stored = await tally_rows.append_after(
            conn, previous, replace(tally, headline=message.headline), returning=announced
        )
        accepted = replace(accepted, tally=stored)
        await self._update_count(conn, count, stored)
        planned = plan(await follow_rows.recipients(conn, count.id), message)
        # Most subscriptions get the same message: written out once (one string for all).
        payloads = {id(p.message): p.message for p in planned}
        texts = {key: shown.to_json() for key, shown in payloads.items()}
        items = [
            follow_rows.delivery(
                p.subscription,
                p.action,
                tally_seq=stored.seq,
                significant=p.keep,
                payload=texts[id(p.message)],
                at=now,
            )
            for p in planned
        ]
        if items:
            await outbox.enqueue(conn, items)
        queued = frozenset(i.channel.platform for i in items)
        return Ingested(accepted, stored, previous, message, queued, owner=count.owner)

    async def _update_count(self, conn: AsyncConnection, count: Count, stored: Tally) -> None:
        """The count's status and ballots received as ``stored`` says, in one UPDATE (none when
        neither changes)."""
        status = STATUS_OF_STATE[stored.state]
        received = count.received if stored.received is None else stored.received
        if status is not count.status or received != count.received:
            await count_rows.set_state(conn, count.id, status, received)

    async def alert(self, notice: Notice, *, once_per: timedelta | None = None) -> None:
        """Queue a notice to the admins of its count's owner (a source went stale, ...):
        ``bot.store.place_alerts``. ``once_per``: a notice of a ``group`` is told once per
        count in that long, whichever instance queued the first (later ones are logged)."""
        async with self.db.begin() as conn:
            if once_per is not None and await self._told_within(conn, notice, once_per):
                log.info("not told again within %s: %s", once_per, notice.text)
                return
            queued = await self._alert(conn, notice, 0)
        if queued:
            self.on_queued(set(queued))

    async def _told_within(self, conn: AsyncConnection, notice: Notice, within: timedelta) -> bool:
        if notice.group is None or not notice.count_id:
            return False
        since = self.clock.now() - within
        earlier = await outbox.alerts_since(conn, notice.count_id, since)
        return any(Notice.from_json(d.payload).group == notice.group for d in earlier)

    async def _alert(self, conn: AsyncConnection, notice: Notice, seq: int) -> frozenset[Platform]:
        now = self.clock.now()
        if self.instance is not None:
            notice = replace(notice, text=f"{notice.text} (instance {self.instance})")
        channels = await place_alerts.targets(conn, notice.count_id, self.alert_channels)
        items = [
            NewDelivery(
                subscription_id=None,
                channel=channel,
                count_id=notice.count_id or "",
                tally_seq=seq,
                action=DeliveryAction.ALERT,
                significant=True,
                payload=notice.to_json(),
                created_at=now,
            )
            for channel in channels
        ]
        if items:
            await outbox.enqueue(conn, items)
        return frozenset(c.platform for c in channels)

    def _refusal(self, actor: str, action: str, tally: Tally, exc: Replayed) -> AuditEntry:
        return AuditEntry(
            at=self.clock.now(),
            actor=actor,
            action=action or "update",
            count_id=tally.count_id,
            old="",
            new=figures(tally),
            allowed=False,
            detail=f"refused: replayed ({exc})",
        )

    def _audit_entry(self, actor: str, action: str, result: Ingested) -> AuditEntry:
        if isinstance(result.detection, Rejected):
            detail = f"rejected: {result.detection.detail}"
        else:
            detail = "accepted" if result.accepted else "no change"
        return AuditEntry(
            at=self.clock.now(),
            actor=actor,
            action=action or "update",
            count_id=result.tally.count_id,
            old=figures(result.previous) if result.previous else "",
            new=figures(result.tally),
            allowed=True,
            detail=detail,
        )


def figures(tally: Tally) -> str:
    """A tally's figures as an admin would type them: ``yes=463 no=1100 void=0 ...``."""
    parts = [f"{k}={v}" for k, v in tally.votes.items()]
    parts += [f"void={tally.void}", f"challenged={tally.challenged}"]
    if tally.sustained:
        parts.append(f"sustained={tally.sustained}")
    if tally.received is not None:
        parts.append(f"received={tally.received}")
    parts.append(f"state={tally.state.value}")
    return " ".join(parts)
