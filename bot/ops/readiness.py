"""What ``GET /readyz`` checks: is the bot able to do its job right now?

* ``store``: the store answers (within :data:`STORE_TIMEOUT` seconds);
* ``adapter:<platform>``: every adapter is connected, as its ``health()`` says (a gateway that
  dropped and is reconnecting is not), with the reason when it is not;
* ``delivery:<platform>``: the dispatcher's worker loop for the platform runs (it is down, with
  the reason, from a failure until it has started again: ``Dispatcher.problems``);
* ``source:<count>``: the polled source of every count that is counting is fresh (not
  :attr:`SourceHealth.is_stale`). Manual and push-only counts, and counts that are scheduled,
  paused or final, or whose scheduled start or restart is still ahead
  (``bot.store.schedules``), are not checked, nor the sources of counts made in chat (a tenant's
  broken feed is that tenant's to fix, not a reason to restart the bot).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from bot.base.clock import Clock
from bot.delivery.adapter import Adapter
from bot.delivery.worker import Dispatcher
from bot.domain.model import OPERATOR, CountStatus
from bot.domain.subscription import Platform
from bot.domain.words import count_of
from bot.errors import StoreError
from bot.ingest.sources.base import Source
from bot.ingest.sources.health import SourceHealth
from bot.settings.loader import Config
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows

STORE_TIMEOUT = 5.0


class Running(Protocol):
    """What the checks read of the running bot (``bot.runtime.app.App`` has it all)."""

    @property
    def config(self) -> Config: ...
    @property
    def db(self) -> Database: ...
    @property
    def adapters(self) -> Mapping[Platform, Adapter]: ...
    @property
    def dispatcher(self) -> Dispatcher: ...
    @property
    def sources(self) -> Mapping[str, Source]: ...
    @property
    def health(self) -> Mapping[str, SourceHealth]: ...
    @property
    def clock(self) -> Clock: ...


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    problem: str | None = None
    """What is wrong; None when the check passed."""

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True, slots=True)
class Readiness:
    checks: tuple[Check, ...]

    @property
    def ready(self) -> bool:
        return all(c.ok for c in self.checks)

    def to_json(self) -> dict[str, object]:
        """``{"status": "ready"|"not ready", "problems": [...], "checks": {name: {...}}}``."""
        checks: dict[str, object] = {}
        for c in self.checks:
            checks[c.name] = {"ok": True} if c.ok else {"ok": False, "problem": c.problem}
        return {
            "status": "ready" if self.ready else "not ready",
            "problems": [f"{c.name}: {c.problem}" for c in self.checks if not c.ok],
            "checks": checks,
        }


def source_problem(name: str, health: SourceHealth) -> str | None:
    """Why a source is stale, or None when it is fresh."""
    if not health.is_stale:
        return None
    if health.consecutive_failures >= health.max_failures:
        why = f"{count_of(health.consecutive_failures, 'failed poll')} in a row"
    else:
        why = f"no good fetch for {health.seconds_since_good():.0f} s"
    last = f"; last error: {health.last_error}" if health.last_error is not None else ""
    return f"source {name} is stale: {why}{last}"


async def check(app: Running) -> Readiness:
    """Run every check (see the module docstring)."""
    checks: list[Check] = []
    now, waiting = app.clock.now(), set()
    statuses: dict[str, CountStatus | None] = {
        cc.count.id: cc.count.status for cc in app.config.counts
    }
    try:
        async with asyncio.timeout(STORE_TIMEOUT), app.db.connect() as conn:
            stored = await count_rows.all_counts(conn)
            waiting = {s.count_id for s in await schedule_rows.every(conn) if s.at > now}
        # Only the operator's sources: a feed someone set in chat says nothing of whether the
        # bot can do its job (and must not make it "not ready" for its orchestrator).
        statuses.update({c.id: c.status for c in stored if c.owner == OPERATOR})
        statuses.update({c.id: None for c in stored if c.owner != OPERATOR})
        checks.append(Check("store"))
    except TimeoutError:
        checks.append(Check("store", f"no answer within {STORE_TIMEOUT:g} s"))
    except StoreError as exc:
        checks.append(Check("store", str(exc)))
    for platform, adapter in app.adapters.items():
        state = await adapter.health()
        problem = None if state.connected else (state.reason or "not connected")
        checks.append(Check(f"adapter:{platform}", problem))
    down = app.dispatcher.problems() if app.adapters else {}
    for platform in app.adapters:
        checks.append(Check(f"delivery:{platform}", down.get(platform)))
    for count_id, source in app.sources.items():
        health = app.health.get(count_id)
        if health is None or not source.polled or statuses.get(count_id) != CountStatus.COUNTING:
            continue
        if count_id in waiting:  # it starts or resumes later: its feed may well be silent
            continue
        checks.append(Check(f"source:{count_id}", source_problem(source.name, health)))
    return Readiness(tuple(checks))
