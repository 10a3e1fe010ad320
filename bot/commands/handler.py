"""Carrying out commands, the same way on every platform.

An adapter builds a ``Request`` (who, where, what they typed, and whether its platform's admin
policy says they are an admin: ``bot.platform.Context.request``) and shows the ``Reply``.
:meth:`Commands.handle` runs the request through the middleware chain of
:mod:`bot.commands.chain` (errors, throttle, then per verb: audit, authorise, reply) to the
handler the verb table (:mod:`bot.commands.verbs`, the built-in verbs in
:mod:`bot.commands.builtin`) registers for its verb.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import timedelta, tzinfo

from bot.base.clock import Clock
from bot.base.egress import EgressPolicy
from bot.charts.chart import ChartCache
from bot.charts.process import ChartProcess
from bot.cluster.identity import Instance
from bot.commands import chain, reports
from bot.commands.builtin import VERBS
from bot.commands.inflight import Backlog
from bot.commands.request import Reply, Request
from bot.commands.throttle import Throttle
from bot.commands.verbs import Services, Verbs
from bot.delivery.rehearsal import Rehearsals
from bot.domain.schedule import DEFAULT_REMIND
from bot.domain.subscription import Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.web.public import PageLink, no_link


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
        verbs: Verbs = VERBS,
        page_link: PageLink = no_link,
        count_changed: Callable[[str], Awaitable[None]] | None = None,
        egress: EgressPolicy | None = None,
        instance: Instance | None = None,
        rehearsals: Rehearsals | None = None,
        zone: tzinfo | None = None,
        remind_before: timedelta = DEFAULT_REMIND,
    ) -> None:
        """``instance``: the instance these commands run in, handed to the adapters
        (``bot.platform.Context.instance``); ``rehearsals``: the running adapters'
        (``rehearse``); ``charts``: where ``chart`` draws (the app's; by default a cache of its
        own drawing in processes of its own, which end once idle: their owner, the app, closes
        them at once, so whatever charts for good passes one)."""
        self.db = db
        self.instance = instance
        self.pipeline = pipeline
        self.clock = clock
        self.verbs = verbs
        self.throttle = throttle if throttle is not None else Throttle(clock)
        self.backlog = Backlog()
        """The commands under way on every platform of these commands (the app's), handed to
        the adapters (``bot.platform.Context.backlog``)."""
        self.services = Services(
            db,
            pipeline,
            clock,
            health,
            on_queued,
            charts if charts is not None else ChartCache(process=ChartProcess()),
            verbs,
            page_link,
        )
        if count_changed is not None:
            self.services = replace(self.services, count_changed=count_changed)
        if egress is not None:
            self.services = replace(self.services, egress=egress)
        if rehearsals is not None:
            self.services = replace(self.services, rehearsals=rehearsals)
        self.services = replace(self.services, zone=zone, remind_before=remind_before)
        per_call = [
            chain.audit(self.services),
            chain.authorise(self.services),
            chain.reply(self.throttle),
        ]
        self._run = chain.chain(
            [chain.errors, chain.throttle(self.throttle)],
            chain.dispatch(self.services, per_call),
        )

    async def handle(self, request: Request) -> Reply:
        """Carry out one command and answer it: always a reply, never an exception.

        Errors are one-line replies; anything unexpected is logged and answered with a short
        error. Throttled (:mod:`bot.commands.throttle`): beyond a person's limit the command is
        answered with how long to wait; beyond a channel's public replies, the reply is private.
        """
        return await self._run(request)
