"""The running bot: everything wired together, started and stopped as one.

    source --(scheduler/poller)--> pipeline: detect -> format -> outbox --> dispatcher --> adapter
                         admins' commands ---^

``App`` is an async context manager: entering opens the store, brings the configured counts into
it, opens the sources and adapters, and starts the scheduler and the dispatcher; leaving stops
them in the reverse order. Nothing is announced twice across a restart: the pipeline compares
each tally with the last one stored, and the outbox remembers what was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

from bot.base.clock import Clock, Sleep, SystemClock
from bot.base.lifecycle import Closing
from bot.charts.chart import FAILURE_WINDOW, ChartCache, failure_notice
from bot.charts.process import ChartProcess
from bot.cluster import Instance, instance_id_from
from bot.cluster.polls import PollLeases
from bot.cluster.single import SingleInstance, lock_path
from bot.commands.builtin import VERBS
from bot.commands.handler import Commands
from bot.delivery.adapter import Adapter
from bot.delivery.rehearsal import Rehearsals
from bot.delivery.reminders import REMINDERS, TICK, Reminders, seed_schedules
from bot.delivery.worker import Dispatcher
from bot.domain.model import Count, CountStatus, Tally
from bot.domain.schedule import Schedule
from bot.domain.subscription import Platform
from bot.ingest.live import LiveCounts, Seeded, reconcile
from bot.ingest.pipeline import Pipeline
from bot.ingest.poller import Poller
from bot.ingest.scheduler import Scheduler
from bot.ingest.sources.base import Source
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.health import SourceHealth
from bot.ingest.sources.settings import ManualSettings
from bot.ops import readiness
from bot.ops.metrics import Metrics
from bot.settings.loader import Config
from bot.settings.secrets import secret, store_url
from bot.store import Database
from bot.store import counts as count_rows
from bot.web.public import PublicCounts, StorePublic, page_link

if TYPE_CHECKING:  # imported where started: only a bot with [server] / [web] needs them
    from bot.ops.server import OpsServer
    from bot.web.server import WebServer

log = logging.getLogger(__name__)

AdapterFactory = Callable[[Commands], Adapter]
"""Makes a platform's adapter once the core's command handler exists (``bot.runtime.plugins``)."""


class App(Closing):
    def __init__(
        self,
        config: Config,
        adapters: Mapping[Platform, AdapterFactory],
        *,
        clock: Clock | None = None,
        sleep: Sleep = asyncio.sleep,
        schema: str | None = None,
        poll: bool = True,
        instance: Instance | None = None,
        public: PublicCounts | None = None,
        chart_process: ChartProcess | None = None,
    ) -> None:
        """``instance``: this instance (default: one named by ``[cluster] instance_id`` or
        ``$TALLYBOT_INSTANCE_ID``, else ``HOST-PID-RANDOM``). ``public``: which counts have a
        public page (default: those the store calls public, ``bot.web.public.StorePublic``).
        ``chart_process``: where its charts are drawn (default: processes of its own; one given
        is held while the app runs, and shut down by the last holder to let it go)."""
        self.config = config
        self.instance = instance or Instance(instance_id_from(config.cluster.instance_id))
        self.clock = clock or SystemClock()
        self.sleep = sleep
        self.db = Database(
            store_url(config.store_url, config.store_password_env),
            schema=schema,
            plugins=config.plugins.tables(),
        )
        self.public = public or StorePublic(self.db)
        self.scheduler = Scheduler()
        self.sources: dict[str, Source] = {}
        self.health: dict[str, SourceHealth] = {}
        self.pollers: dict[str, Poller] = {}
        self._factories = dict(adapters)
        self._poll = poll
        self._stack = AsyncExitStack()
        self._dispatch_task: asyncio.Task[None] | None = None
        alerts = tuple(c for c in config.admins.alerts if c.platform in adapters)
        self._dispatcher: Dispatcher | None = None
        self.metrics = Metrics(self.instance.id)
        self.server: OpsServer | None = None
        """The ops server, when ``[server]`` is configured (started on entering)."""
        self.page_link = page_link(self.public, config.web.public_url if config.web else None)
        """A public count's page, linked from ``status`` and final messages."""
        self.web: WebServer | None = None
        """The public pages, when ``[web]`` is configured (started on entering)."""
        self.pipeline = Pipeline(
            self.db,
            self.clock,
            alert_channels=alerts,
            on_queued=self._wake,
            metrics=self.metrics,
            instance=self.instance.id,
            on_accepted=self._accepted,
            page_link=self.page_link,
        )
        self.chart_process = chart_process or ChartProcess()
        """The processes this app's charts are drawn in (no other app's), ended with it."""
        self.charts = ChartCache(process=self.chart_process, failed=self._chart_failed)
        """Charts drawn for the ``chart`` command and for final messages, shared by both; one
        that could not be drawn is alerted to its count's place."""
        self.poll_leases = PollLeases(self.db, self.clock, self.instance, sleep=sleep)
        """Which counts this instance polls (on PostgreSQL, those whose lease it holds)."""
        self.live = LiveCounts(
            self.db,
            self.scheduler,
            self.pipeline,
            self.clock,
            sleep=sleep,
            metrics=self.metrics,
            egress=config.chat_sources,
            sources=self.sources,
            pollers=self.pollers,
            health=self.health,
            configured={cc.count.id: cc.interval for cc in config.counts},
            poll=poll,
            guard=self.poll_leases.guard,
            holds=self.poll_leases.holds,
        )
        """Counts made and changed in chat: their sources and jobs follow the store at once."""
        self.rehearsals = Rehearsals(self.clock, sleep)
        """``rehearse``: test messages through the adapters, once they are open."""
        self.commands = Commands(
            self.db,
            self.pipeline,
            self.clock,
            health=self.health.get,
            on_queued=self._wake,
            charts=self.charts,
            page_link=self.page_link,
            count_changed=self.live.changed,
            egress=config.chat_sources,
            instance=self.instance,
            rehearsals=self.rehearsals,
            verbs=VERBS.extended(
                verb for p, s in config.platforms.items() for verb in config.plugins[p].verbs(s)
            ),
            zone=config.timezone,
            remind_before=config.remind_before,
        )
        self.reminders = Reminders(
            self.db, self.clock, lead=config.remind_before, on_queued=self._wake
        )
        """Reminders before a scheduled start or restart, queued through the outbox (a job of
        the scheduler's, with the app's clock)."""
        self.adapters: dict[Platform, Adapter] = {}
        self.seeded = Seeded()
        """What the configuration file's counts did to the store on start."""

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher; it exists once the app is entered (it needs the opened adapters)."""
        if self._dispatcher is None:
            raise RuntimeError("the app is not running: enter it with `async with`")
        return self._dispatcher

    def _accepted(self, tally: Tally) -> None:
        if self.web is not None:  # the public pages' viewers get it live
            self.web.accepted(tally.count_id, tally.seq)

    async def _chart_failed(self, count: Count, exc: Exception) -> None:
        await self.pipeline.alert(failure_notice(count, exc), once_per=FAILURE_WINDOW)

    def _wake(self, platforms: set[Platform]) -> None:
        if self._dispatcher is not None:  # nothing is delivered before the app is entered
            self._dispatcher.wake(platforms)

    async def aopen(self) -> None:
        """Open the store, the adapters and the sources; start the server, delivery, polling."""
        try:
            lock = lock_path(self.config.store_url)
            if lock is not None:  # SQLite: this instance alone
                await self._stack.enter_async_context(SingleInstance(lock, self.instance.id))
            self.chart_process.hold()  # its charts' processes end with the app (the last one)
            self._stack.push_async_callback(self.chart_process.release)
            await self._stack.enter_async_context(self.db)
            self._stack.push_async_callback(self.poll_leases.release_all)  # after polling stops
            await self._sync_counts()
            for platform, factory in self._factories.items():
                self.adapters[platform] = await self._stack.enter_async_context(
                    factory(self.commands)
                )
            self._dispatcher = Dispatcher(
                self.db,
                self.adapters,
                self.clock,
                sleep=self.sleep,
                alert_channels=self.pipeline.alert_channels,
                metrics=self.metrics,
                charts=self.charts,
                instance=self.instance.id,
                claim_seconds=self.config.cluster.claim_seconds,
            )
            for platform, adapter in self.adapters.items():  # replies share delivery's pace
                adapter.pace_replies(self.dispatcher.pacers[platform])
            self.rehearsals.attach(self.adapters, self.dispatcher.pacers)
            self._stack.push_async_callback(self.rehearsals.aclose)  # before the adapters close
            await self._open_sources()
            await self._start_server()
            await self._start_web()
            self._dispatch_task = asyncio.create_task(self.dispatcher.run(), name="dispatcher")
            if self._poll:
                self.scheduler.every(REMINDERS, TICK, self.reminders.run_once)
                self.scheduler.start()
                self._stack.push_async_callback(self.scheduler.stop)
        except BaseException:
            await self._stack.aclose()
            raise

    async def aclose(self) -> None:
        """Finish the commands acknowledged (every adapter at once, while the store is open),
        stop delivery, then close everything in the reverse order it was opened."""
        await asyncio.gather(*(a.finish_commands() for a in self.adapters.values()))
        if self._dispatch_task is not None:
            self._dispatch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._dispatch_task
        if self._dispatcher is not None:  # the sending leases, to another instance
            await self._dispatcher.hand_back()
        await self._stack.aclose()

    async def _sync_counts(self) -> None:
        """Bring the configured counts into the store (the store is the source of truth: what
        chat changed is kept; ``bot.ingest.live.reconcile``)."""
        self.seeded = await reconcile(self.db, self.config.counts)
        await seed_schedules(self.db, _schedules(self.config), self.clock.now())

    async def reload(self, config: Config) -> Seeded:
        """The configuration file read again (SIGHUP): its counts reconciled into the store as on
        start (what chat changed is kept), and the polling of the counts it changed brought in
        step (archived or final: stopped). A count new to the file is in the store at once
        (commands, pushes); the sources the file sets, and every other setting, are read on the
        next start, and the log says which counts wait for it."""
        seeded = await reconcile(self.db, config.counts)
        await seed_schedules(self.db, _schedules(config), self.clock.now())
        started = {cc.count.id for cc in self.config.counts}
        for count_id in seeded.changed:
            if count_id in started:
                await self.live.changed(count_id)
        waiting = [
            cc.count.id
            for cc in config.counts
            if cc.count.id in seeded.added and not isinstance(cc.source, ManualSettings)
        ]
        if waiting:
            log.warning(
                "counts new to the configuration file, polled from the next start: %s",
                ", ".join(waiting),
            )
        return seeded

    async def _open_sources(self) -> None:
        async with self.db.connect() as conn:
            stored = {c.id: c for c in await count_rows.all_counts(conn, archived=True)}
        polled = 0
        for i, cc in enumerate(self.config.counts):
            if cc.count.id in self.seeded.refused:
                continue
            count = stored[cc.count.id]
            source = build_source(
                count,
                cc.source,
                clock=self.clock,
                base_dir=self.config.base_dir,
                where=f"{self.config.path}: counts[{i}].source",
            )
            await self._stack.enter_async_context(source)
            health = SourceHealth(
                self.clock,
                max_failures=cc.stale_after_failures,
                stale_after=cc.stale_after_seconds,
            )
            running = count.status is not CountStatus.FINAL and not count.archived
            # The first polls spread over the first interval, not all at the start.
            first_in = cc.interval * polled / len(self.config.counts)
            if self.live.watch(
                count.id, source, health, cc.interval, running=running, first_in=first_in
            ):
                polled += 1
        await self.live.start()
        self._stack.push_async_callback(self.live.aclose)

    async def _start_server(self) -> None:
        """Start the ops server if configured, with the routes adapters offer (``http_routes``)."""
        settings = self.config.server
        if settings is None:
            return
        from bot.ops.server import OpsServer, Served  # only with [server]

        served = Served(
            db=self.db,
            clock=self.clock,
            pipeline=self.pipeline,
            metrics=self.metrics,
            ready=lambda: readiness.check(self),
            platforms=tuple(self.adapters),
            count_ids=tuple(cc.count.id for cc in self.config.counts),
            polled_health={k: h for k, h in self.health.items() if self.sources[k].polled},
            count_changed=self.live.changed,
            instance=self.instance,
        )
        server = OpsServer(served, settings, push_secret=secret(settings.push_secret_env))
        for adapter in self.adapters.values():
            server.add_routes(adapter.http_routes())
        self.server = await self._stack.enter_async_context(server)

    async def _start_web(self) -> None:
        """Start the public pages if configured (``[web]``)."""
        if self.config.web is None:
            return
        from bot.web.events import Counts  # only with [web] (jinja2 and all)
        from bot.web.server import WebServer

        counts = Counts(self.db, self.public, self.health.get, clock=self.clock)
        server = WebServer(counts, self.config.web, charts=self.charts)
        self.web = await self._stack.enter_async_context(server)

    async def idle(self) -> None:
        """Wait until every due delivery has been handled (for the demo and tests)."""
        for platform in self.adapters:
            while await self.dispatcher.drain(platform):
                pass


def _schedules(config: Config) -> list[Schedule]:
    """The scheduled times the configuration file gives its counts."""
    return [cc.schedule for cc in config.counts if cc.schedule is not None]
