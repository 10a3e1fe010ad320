"""Carrying out commands, the same way on every platform.

An adapter builds a ``Request`` (who, where, what they typed) and shows the ``Reply``. Admin
commands are checked against the configured admins; refusals are written to the audit log too.
Manual figures go through the same pipeline as a polled tally.
"""

from __future__ import annotations

import difflib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

from bot.admins import is_admin, refusal_detail
from bot.chart import CHART_TALLIES, ChartCache, chart_attachment
from bot.clock import Clock
from bot.command_hints import rejection_hint
from bot.command_parse import (
    ADMIN_ACTIONS,
    ADMIN_VERBS,
    FIGURE_KEYS,
    USAGE,
    Command,
    Verb,
    parse,
    usage,
)
from bot.config import Admins
from bot.domain import format as fmt
from bot.domain.detect import Accepted, NoChange, Rejected
from bot.domain.message import Attachment, Message, Moment, Part, Timed
from bot.domain.model import Count, Tally, TallyState
from bot.errors import CommandError, NotAuthorized
from bot.ingest.pipeline import Pipeline, figures
from bot.ingest.sources.health import SourceHealth
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.subscription import ChannelRef, Mode, Platform
from bot.throttle import Pass, Throttle

log = logging.getLogger(__name__)

MODE_WORDS = {
    Mode.EVENTS: "significant events only",
    Mode.ALL: "every change",
    Mode.LIVE: "a live scoreboard plus significant events",
}


@dataclass(frozen=True, slots=True)
class Request:
    channel: ChannelRef
    user_id: str
    user_name: str
    text: str
    platform_admin: bool = False
    """The platform says this user administers the place (Discord Manage Server, Slack admin)."""
    roles: frozenset[str] = field(default_factory=frozenset)
    passed: Pass | None = None
    """The limits, already counted by an adapter that had to know them before answering
    (``Throttle.check``); ``None``: counted when the command is handled."""

    @property
    def actor(self) -> str:
        return f"{self.channel.platform}:{self.user_id} ({self.user_name})"


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    message: Message | None = None
    ok: bool = True
    ephemeral: bool = True
    """Shown only to the person who asked (errors, lists); status is shown to them too."""
    attachment: Attachment | None = None
    """A file to show with the text, e.g. the PNG of ``chart``."""
    timed: Timed | None = None
    """The text with its times as values (``history``), for surfaces that show each reader a
    time in their own zone; ``text`` says the same with the times in UTC."""

    @property
    def body(self) -> Timed:
        """The text to show, times as values."""
        return self.timed if self.timed is not None else Timed.of(self.text)


class Commands:
    def __init__(
        self,
        db: Database,
        pipeline: Pipeline,
        admins: Admins,
        clock: Clock,
        *,
        health: Callable[[str], SourceHealth | None] = lambda count_id: None,
        on_queued: Callable[[set[Platform]], None] = lambda platforms: None,
        charts: ChartCache | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.db = db
        self.pipeline = pipeline
        self.admins = admins
        self.clock = clock
        self.health = health
        self.on_queued = on_queued
        self.charts = charts if charts is not None else ChartCache()
        self.throttle = throttle if throttle is not None else Throttle(clock)

    async def handle(self, request: Request) -> Reply:
        """Carry out one command and answer it: always a reply, never an exception.

        Errors are one-line replies; anything unexpected is logged and answered with a short
        error. Throttled (:mod:`bot.throttle`): beyond a person's limit the command is answered
        with how long to wait; beyond a channel's public replies, the reply is private.
        """
        ticket = request.passed
        wait = ticket.wait if ticket else self.throttle.admit(request.channel, request.user_id)
        if wait > 0:
            limit = self.throttle.per_user
            return Reply(
                f"Slow down: at most {limit.limit} commands in {limit.seconds:g} seconds each; "
                f"try again in {math.ceil(wait)} s.",
                ok=False,
            )
        try:
            reply = await self._handle(request)
        except Exception:
            log.exception("command %r from %s failed", request.text[:200], request.actor)
            return Reply(
                "Error: tallybot could not do that (an internal error, in the operator's log); "
                "try again in a minute.",
                ok=False,
            )
        if reply.ephemeral:
            return reply
        if ticket.public if ticket else self.throttle.publish(request.channel):
            return reply
        if reply.attachment is not None:  # a file cannot be shown privately everywhere
            seconds = self.throttle.public_per_channel.seconds
            note = f"(The channel was shown one less than {seconds:g} s ago: ask again then.)"
            return replace(reply, text=f"{reply.text} {note}", attachment=None, ephemeral=True)
        return replace(reply, ephemeral=True)

    async def _handle(self, request: Request) -> Reply:
        try:
            command = parse(request.text)
            if command.verb in ADMIN_VERBS and not is_admin(self.admins, request):
                await self._refused(request, command)
                raise NotAuthorized(
                    f"only admins can {ADMIN_ACTIONS[command.verb]}; ask an admin of this "
                    f"{'server' if request.channel.platform is Platform.DISCORD else 'workspace'}"
                )
            return await self._run(request, command)
        except CommandError as exc:
            return Reply(f"Error: {exc}", ok=False)

    async def _refused(self, request: Request, command: Command) -> None:
        async with self.db.begin() as conn:
            await audit_rows.record(
                conn,
                AuditEntry(
                    at=self.clock.now(),
                    actor=request.actor,
                    action=command.verb.value,
                    count_id=command.count,
                    old="",
                    new=request.text,
                    allowed=False,
                    detail=refusal_detail(self.admins, request),
                ),
            )

    async def _run(self, request: Request, command: Command) -> Reply:
        verb = command.verb
        if verb is Verb.HELP:
            return Reply("Commands:\n" + "\n".join(f"  {u}" for u in USAGE.values()))
        if verb is Verb.LIST:
            return await self._list(request)
        if verb is Verb.DELIVERIES:
            return await self._deliveries()
        if verb is Verb.STATUS:
            return await self._status(request, command.count)
        assert command.count is not None
        count = await self.find_count(command.count)
        if verb is Verb.SUBSCRIBE:
            assert command.mode is not None
            return await self._subscribe(request, count, command.mode)
        if verb is Verb.UNSUBSCRIBE:
            async with self.db.begin() as conn:
                gone = await sub_rows.unsubscribe(conn, request.channel, count.id)
            if not gone:
                raise CommandError(f"this channel is not subscribed to {count.id}")
            return Reply(f"Unsubscribed this channel from {count.id}.")
        if verb is Verb.HISTORY:
            return await self._history(count)
        if verb is Verb.CHART:
            return await self._chart(count)
        return await self._manual(request, command, count)

    async def find_count(self, name: str) -> Count:
        async with self.db.connect() as conn:
            count = await count_rows.get(conn, name)
            if count is not None:
                return count
            every = await count_rows.all_counts(conn)
        ids = [c.id for c in every]
        close = difflib.get_close_matches(name, ids, n=3, cutoff=0.4)
        close += [c.id for c in every if name in c.id or name in c.title.lower()]
        hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
        known = f" (counts: {', '.join(ids)})" if ids and not close else ""
        raise CommandError(f"unknown count {name!r}{hint}{known}")

    async def _list(self, request: Request) -> Reply:
        async with self.db.connect() as conn:
            counts = await count_rows.all_counts(conn)
            subs = {s.count_id: s for s in await sub_rows.for_channel(conn, request.channel)}
        if not counts:
            return Reply("No counts are configured.")
        lines = []
        for c in counts:
            sub = subs.get(c.id)
            mark = f" — subscribed ({sub.mode})" if sub and sub.enabled else ""
            if sub and not sub.enabled:
                mark = f" — subscription disabled: {sub.disabled_reason}"
            lines.append(f"{c.id}: {c.title} [{c.status}]{mark}")
        return Reply("\n".join(lines))

    async def _status(self, request: Request, name: str | None) -> Reply:
        if name is None:
            async with self.db.connect() as conn:
                subs = await sub_rows.for_channel(conn, request.channel)
                counts = await count_rows.all_counts(conn)
            if len(subs) == 1:
                name = subs[0].count_id
            elif len(counts) == 1:
                name = counts[0].id
            else:
                return await self._summary(counts)
        count = await self.find_count(name)
        async with self.db.connect() as conn:
            last = await tally_rows.last(conn, count.id)
        checked = self._checked(count.id)
        if last is None:
            text = Timed.of(f"{count.title}: no figures yet.")
            if checked is not None:
                text = Timed.of(*text.parts, " ", *checked.parts)
            return Reply(str(text), ephemeral=False, timed=text)
        message = fmt.for_status(count, last)
        if checked is not None:
            message = replace(message, notes=(*message.notes, checked))
        return Reply(message.headline, message=message, ephemeral=False)

    async def _summary(self, counts: list[Count]) -> Reply:
        """``status`` with no count named: one line for each count."""
        if not counts:
            return Reply("No counts are configured.")
        lines = []
        async with self.db.connect() as conn:
            for c in counts:
                last = await tally_rows.last(conn, c.id)
                now = fmt.for_status(c, last).headline if last else "no figures yet"
                lines.append(f"{c.id} [{c.status}]: {now}")
        return Reply("\n".join([*lines, f"For one count's figures: {usage(Verb.STATUS)}"]))

    def _checked(self, count_id: str) -> Timed | None:
        """``Last checked ...; last changed ...; source stale (...)``, the times as values."""
        h = self.health(count_id)
        if h is None or h.last_checked is None:
            return None
        parts: list[Part] = [Moment(h.last_checked, lead="Last checked ", relative=True)]
        if h.last_changed is not None:
            parts.append(Moment(h.last_changed, lead="; last changed ", relative=True))
        if h.is_stale:
            parts.append(f"; source stale ({h.last_error or 'no good fetch'})")
        return Timed.of(*parts, ".")

    async def _subscribe(self, request: Request, count: Count, mode: Mode) -> Reply:
        async with self.db.begin() as conn:
            sub, created = await sub_rows.subscribe(
                conn, request.channel, count.id, mode, by=request.actor, at=self.clock.now()
            )
            last = await tally_rows.last(conn, count.id)
            if mode is Mode.LIVE and last is not None:
                board = fmt.for_status(count, last)
                await outbox.enqueue(
                    conn,
                    [
                        NewDelivery(
                            subscription_id=sub.id,
                            channel=sub.channel,
                            count_id=count.id,
                            tally_seq=last.seq,
                            action=DeliveryAction.EDIT_LIVE,
                            significant=False,
                            payload=board.to_json(),
                            created_at=self.clock.now(),
                        )
                    ],
                )
        if mode is Mode.LIVE and last is not None:
            self.on_queued({request.channel.platform})
        verb = "Subscribed" if created else "Updated the subscription of"
        return Reply(f"{verb} this channel to {count.id}: {MODE_WORDS[mode]}.", ephemeral=False)

    async def _history(self, count: Count) -> Reply:
        async with self.db.connect() as conn:
            rows = await tally_rows.history(conn, count.id, limit=15)
        if not rows:
            return Reply(f"{count.id}: no figures yet.")
        last = "the last update" if len(rows) == 1 else f"the last {len(rows)} updates"
        parts: list[Part] = [f"{count.title} — {last}:"]
        for t in rows:
            parts += [f"\n#{t.seq} ", Moment(t.observed_at)]
            parts.append(f" {figures(t)} ({t.source})" + (" [correction]" if t.correction else ""))
        text = Timed.of(*parts)
        return Reply(str(text), timed=text)

    async def _chart(self, count: Count) -> Reply:
        async with self.db.connect() as conn:
            rows = await tally_rows.history(conn, count.id, limit=CHART_TALLIES)
        if not rows:
            return Reply(f"{count.id}: no figures yet.")
        chart = await chart_attachment(count, rows, cache=self.charts)
        return Reply(
            f"Chart of {count.title}, as of update #{rows[-1].seq}.",
            ephemeral=False,
            attachment=chart,
        )

    async def _deliveries(self) -> Reply:
        async with self.db.connect() as conn:
            dead = await outbox.dead(conn, limit=20)
        if not dead:
            return Reply("Every message was delivered (nothing gave up).")
        lines = [f"{d.count_id} #{d.tally_seq} to {d.channel}: {d.last_error}" for d in dead]
        return Reply("Messages that could not be delivered:\n" + "\n".join(lines))

    async def _manual(self, request: Request, command: Command, count: Count) -> Reply:
        async with self.db.connect() as conn:
            last = await tally_rows.last(conn, count.id)
        tally = manual_tally(count, last, command, request, self.clock.now())
        result = await self.pipeline.ingest(tally, actor=request.actor, action=command.verb.value)
        d = result.detection
        if isinstance(d, NoChange):
            return Reply(f"No change: {count.id} already shows those figures.")
        if isinstance(d, Rejected):
            hint = rejection_hint(count, command, tally, d)
            return Reply(f"Rejected: {d.detail}{hint}", ok=False)
        assert isinstance(d, Accepted)
        assert result.message is not None
        return Reply(
            f"Accepted update #{result.tally.seq} for {count.id}: {result.message.headline}",
            message=result.message,
        )


def manual_tally(
    count: Count, last: Tally | None, command: Command, request: Request, now: datetime
) -> Tally:
    """The tally an admin's command describes: the last figures with the given ones changed."""
    votes = dict(last.votes) if last else dict.fromkeys(count.choice_ids, 0)
    void = last.void if last else 0
    challenged = last.challenged if last else 0
    received = last.received if last else None
    for key, value in command.figures:
        if key in count.choice_ids:
            votes[key] = value
        elif key == "void":
            void = value
        elif key == "challenged":
            challenged = value
        elif key == "received":
            received = value
        else:
            names = ", ".join([*count.choice_ids, *FIGURE_KEYS])
            raise CommandError(f"unknown choice {key!r} for {count.id}; use one of: {names}")
    state = last.state if last else TallyState.COUNTING
    if command.verb is Verb.PAUSE:
        state = TallyState.PAUSED
    elif command.verb is Verb.RESUME:
        state = TallyState.COUNTING
    elif command.verb is Verb.FINAL:
        state = TallyState.FINAL
    elif command.verb is Verb.UPDATE and state is TallyState.PAUSED:
        state = TallyState.COUNTING  # new figures: the count is going again
    return Tally(
        count_id=count.id,
        votes=votes,
        observed_at=now,
        source=f"admin {request.user_name}",
        void=void,
        challenged=challenged,
        received=received,
        state=state,
        correction=command.verb is Verb.CORRECT,
    )
