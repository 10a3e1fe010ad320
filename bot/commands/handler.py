"""Carrying out commands, the same way on every platform.

An adapter builds a ``Request`` (who, where, what they typed, and whether its platform's admin
policy says they are an admin: ``bot.platform.Context.request``) and shows the ``Reply``. Admin
commands are refused unless the request says admin; refusals are written to the audit log too.
The answers themselves are :mod:`bot.commands.reports` (read-only) and
:mod:`bot.commands.manual` (manual figures, through the same pipeline as a polled tally).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace

from bot.chart import ChartCache
from bot.clock import Clock
from bot.commands import reports
from bot.commands.manual import manual
from bot.commands.parse import ADMIN_ACTIONS, ADMIN_VERBS, USAGE, Command, Verb, parse
from bot.commands.request import Reply, Request
from bot.commands.throttle import Throttle
from bot.domain import format as fmt
from bot.domain.model import Count
from bot.errors import CommandError, NotAuthorized
from bot.ingest.pipeline import Pipeline
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.subscription import Mode, Platform

log = logging.getLogger(__name__)

MODE_WORDS = {
    Mode.EVENTS: "significant events only",
    Mode.ALL: "every change",
    Mode.LIVE: "a live scoreboard plus significant events",
}


class Commands:
    def __init__(
        self,
        db: Database,
        pipeline: Pipeline,
        clock: Clock,
        *,
        health: reports.Health = lambda count_id: None,
        on_queued: Callable[[set[Platform]], None] = lambda platforms: None,
        charts: ChartCache | None = None,
        throttle: Throttle | None = None,
    ) -> None:
        self.db = db
        self.pipeline = pipeline
        self.clock = clock
        self.health = health
        self.on_queued = on_queued
        self.charts = charts if charts is not None else ChartCache()
        self.throttle = throttle if throttle is not None else Throttle(clock)

    async def handle(self, request: Request) -> Reply:
        """Carry out one command and answer it: always a reply, never an exception.

        Errors are one-line replies; anything unexpected is logged and answered with a short
        error. Throttled (:mod:`bot.commands.throttle`): beyond a person's limit the command is
        answered with how long to wait; beyond a channel's public replies, the reply is private.
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
            if command.verb in ADMIN_VERBS and not request.admin:
                await self._refused(request, command)
                raise NotAuthorized(
                    f"only admins can {ADMIN_ACTIONS[command.verb]}; ask an admin of this "
                    f"{request.place}"
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
                    detail=request.refusal,
                ),
            )

    async def _run(self, request: Request, command: Command) -> Reply:
        verb = command.verb
        if verb is Verb.HELP:
            return Reply("Commands:\n" + "\n".join(f"  {u}" for u in USAGE.values()))
        if verb is Verb.LIST:
            return await reports.list_counts(self.db, request)
        if verb is Verb.DELIVERIES:
            return await reports.deliveries(self.db)
        if verb is Verb.STATUS:
            return await reports.status(self.db, self.health, request, command.count)
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
            return await reports.history(self.db, count)
        if verb is Verb.CHART:
            return await reports.chart(self.db, self.charts, count)
        return await manual(self.db, self.pipeline, self.clock, request, command, count)

    async def find_count(self, name: str) -> Count:
        """The count called ``name``, or a CommandError naming the close ones."""
        return await reports.find_count(self.db, name)

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
