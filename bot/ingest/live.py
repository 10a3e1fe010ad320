"""Counts that change while the bot runs: the file's seed brought into the store, and what chat
makes, changes, archives or deletes followed at once by the sources and the scheduler.

:func:`reconcile` brings the configuration file's counts into the store on start. The store is
the source of truth: a count changed in chat (``edited_by``) is left as it is, a name a tenant
took first is not overwritten, and the log says what was added, changed and left alone.

:class:`LiveCounts` keeps the polling of counts made in chat: :meth:`LiveCounts.changed` (the
commands' ``Services.count_changed``) opens, replaces or closes a count's source and its
scheduler job. A source typed in chat is fetched only through the egress guard
(:class:`~bot.base.egress.GuardedSession` under the operator's
:class:`~bot.base.egress.EgressPolicy`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, fields, replace
from functools import partial
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from bot.base.clock import Clock, Sleep
from bot.base.egress import EgressPolicy
from bot.domain.model import OPERATOR, Count, CountStatus
from bot.errors import ConfigError
from bot.ingest.pipeline import Pipeline
from bot.ingest.poller import Poller
from bot.ingest.scheduler import Scheduler
from bot.ingest.sources.base import Source
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.health import SourceHealth
from bot.ingest.sources.settings import HttpCsvSettings, HttpJsonSettings
from bot.ops.hooks import Hooks, count_label
from bot.settings.counts import (
    DEFAULT_FAILURES,
    DEFAULT_INTERVAL,
    DEFAULT_STALE_MINUTES,
    CountConfig,
)
from bot.store import Database
from bot.store import counts as count_rows

log = logging.getLogger(__name__)

ChatSource = HttpJsonSettings | HttpCsvSettings
_CHAT_SOURCE: TypeAdapter[ChatSource] = TypeAdapter(ChatSource)


@dataclass(frozen=True, slots=True)
class Seeded:
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    """Changed in chat since: the file's version is not applied."""
    refused: tuple[str, ...] = ()
    """The name belongs to a count a tenant made: the file's count is not loaded."""


def _differences(old: Count, new: Count) -> list[str]:
    return [f.name for f in fields(Count) if getattr(old, f.name) != getattr(new, f.name)]


async def reconcile(db: Database, configured: Iterable[CountConfig]) -> Seeded:
    """Bring the file's counts into the store (see the module docstring); logs what it did."""
    added, changed, unchanged, kept, refused = [], [], [], [], []
    async with db.begin() as conn:
        for cc in configured:
            wanted = cc.count
            stored = await count_rows.get(conn, wanted.id)
            if stored is None:
                await count_rows.upsert(conn, wanted)
                added.append(wanted.id)
                continue
            if stored.owner != OPERATOR:
                log.error(
                    "count %s of the configuration file is not loaded: %s made a count of that "
                    "name in chat (rename one of them)",
                    wanted.id,
                    stored.owner,
                )
                refused.append(wanted.id)
                continue
            editor = await count_rows.edited_by(conn, wanted.id)
            if editor is not None:
                log.warning(
                    "count %s was changed in chat by %s: the configuration file's version is "
                    "not applied (edit it in chat, or delete it there to take the file's)",
                    wanted.id,
                    editor,
                )
                kept.append(wanted.id)
                continue
            merged = replace(
                wanted, status=stored.status, received=stored.received, archived=stored.archived
            )
            if merged == stored:
                unchanged.append(wanted.id)
                continue
            log.info(
                "count %s changed in the configuration file: %s",
                wanted.id,
                ", ".join(_differences(stored, merged)),
            )
            await count_rows.upsert(conn, merged)
            changed.append(wanted.id)
    seeded = Seeded(*map(tuple, (added, changed, unchanged, kept, refused)))
    log.info(
        "counts from the configuration file: added %s; changed %s; left alone %s",
        ", ".join(seeded.added) or "none",
        ", ".join(seeded.changed) or "none",
        ", ".join([*seeded.unchanged, *seeded.kept]) or "none",
    )
    return seeded


def chat_source(stored: str) -> ChatSource:
    """A source set in chat, from the store: http only, never a header (nor one from the
    operator's environment)."""
    try:
        source = _CHAT_SOURCE.validate_json(stored)
    except ValidationError as exc:
        raise ConfigError(f"a stored chat source does not read: {exc.errors()[0]['msg']}") from None
    return source.model_copy(update={"headers": {}, "headers_from_env": {}})


Poll = Callable[[], Awaitable[object]]
Guard = Callable[[str, float, Poll], Poll]


def everywhere(count_id: str) -> bool:
    return True


def unguarded(count_id: str, interval: float, poll: Poll) -> Poll:
    """Every poll runs (one instance)."""
    return poll


class LiveCounts:
    """The sources and scheduler jobs of counts made in chat, kept in step with the store."""

    def __init__(
        self,
        db: Database,
        scheduler: Scheduler,
        pipeline: Pipeline,
        clock: Clock,
        *,
        sleep: Sleep,
        metrics: Hooks,
        egress: EgressPolicy,
        sources: MutableMapping[str, Source],
        pollers: MutableMapping[str, Poller],
        health: MutableMapping[str, SourceHealth],
        configured: Mapping[str, float],
        poll: bool,
        guard: Guard = unguarded,
        holds: Callable[[str], bool] = everywhere,
    ) -> None:
        """``guard``: wraps each count's poll so that it runs only where it should (the poll
        leases of ``bot.cluster.polls``, with several instances); ``holds``: whether it still
        does, once a poll's reading is in."""
        self.db = db
        self.scheduler = scheduler
        self.pipeline = pipeline
        self.clock = clock
        self.sleep = sleep
        self.metrics = metrics
        self.egress = egress
        self.sources = sources
        self.pollers = pollers
        self.health = health
        self.configured = dict(configured)
        """The counts whose source the file sets, with their intervals (opened by the app,
        never closed here)."""
        self.poll = poll
        self.guard = guard
        self.holds = holds
        self._mine: dict[str, tuple[str, Source]] = {}
        self._lock = asyncio.Lock()

    async def start(self) -> None:
        """Open the sources of every stored count made in chat."""
        async with self.db.connect() as conn:
            ids = [c.id for c in await count_rows.all_counts(conn) if c.id not in self.configured]
        for count_id in ids:
            await self.changed(count_id)

    async def changed(self, count_id: str) -> None:
        """Follow what the store now says of the count: poll it, stop, or poll anew."""
        async with self._lock:
            async with self.db.connect() as conn:
                count = await count_rows.get(conn, count_id)
                stored = None if count is None else await count_rows.source_json(conn, count_id)
            running = count is not None and not count.archived
            running = running and count is not None and count.status is not CountStatus.FINAL
            if count_id in self.configured:
                self._follow_file_count(count_id, running)
                return
            mine = self._mine.get(count_id)
            if mine is not None and (not running or mine[0] != stored):
                await self._close(count_id)
                mine = None
            if count is None or not running or stored is None or mine is not None:
                return
            await self._open(count, stored)

    def _follow_file_count(self, count_id: str, running: bool) -> None:
        poller = self.pollers.get(count_id)
        source = self.sources.get(count_id)
        if poller is None or source is None or not source.polled or not self.poll:
            return
        if not running:
            self.scheduler.remove(count_id)
        elif count_id not in self.scheduler.jobs():
            interval = self.configured[count_id]
            self.scheduler.add(count_id, interval, self.guard(count_id, interval, poller.poll))

    async def _open(self, count: Count, stored: str) -> None:
        try:
            settings = chat_source(stored)
            source = build_source(
                count,
                settings,
                clock=self.clock,
                base_dir=Path("."),
                where=f"count {count.id}: source",
                env={},
                check_files=False,
                egress=self.egress,
            )
        except ConfigError as exc:
            log.error("count %s: its source cannot be used: %s", count.id, exc)
            return
        await source.__aenter__()
        self._mine[count.id] = (stored, source)
        health = SourceHealth(
            self.clock, max_failures=DEFAULT_FAILURES, stale_after=DEFAULT_STALE_MINUTES * 60
        )
        label = count_label(count.owner, count.id)
        self.watch(count.id, source, health, DEFAULT_INTERVAL, label=label)
        log.info("count %s: polling %s", count.id, settings.url)

    def watch(
        self,
        count_id: str,
        source: Source,
        health: SourceHealth,
        interval: float,
        *,
        running: bool = True,
        first_in: float = 0.0,
        label: str | None = None,
    ) -> bool:
        """Wire a count's source to its health, its poller and (when it runs and is polled)
        its scheduler job, each poll guarded (the poll lease); whether it is scheduled."""
        self.sources[count_id] = source
        self.health[count_id] = health
        poller = Poller(
            count_id,
            source,
            self.pipeline,
            health,
            sleep=self.sleep,
            metrics=self.metrics,
            holds=partial(self.holds, count_id),
            label=label,
        )
        self.pollers[count_id] = poller
        if not (running and self.poll and source.polled):
            return False
        guarded = self.guard(count_id, interval, poller.poll)
        self.scheduler.add(count_id, interval, guarded, first_in=first_in)
        return True

    async def _close(self, count_id: str) -> None:
        self.scheduler.remove(count_id)
        _, source = self._mine.pop(count_id)
        self.sources.pop(count_id, None)
        self.pollers.pop(count_id, None)
        self.health.pop(count_id, None)
        await source.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close every source opened here."""
        async with self._lock:
            for count_id in list(self._mine):
                await self._close(count_id)
