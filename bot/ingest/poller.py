"""Polling one count's source: fetch (retrying transient errors), then hand the tally on.

A not-modified answer costs no store write. A tally that was read but not stored (the store
failed, the poll was cancelled, the poll lease was lost meanwhile) is forgotten by its source
(``Source.forget``), so the next poll reads it again instead of being told "not modified".

Failures are counted in the count's ``SourceHealth``; the poll that makes the source stale, and
the one that ends the stale spell, each queue one notice for the admins. The log follows the
same rule: the first failure, the moment the source goes stale and its recovery are logged; a
failure that changes nothing is debug.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from enum import StrEnum

from bot.base.clock import Sleep
from bot.base.retry import retry_after_hint, retry_transient
from bot.domain.detect import NoChange, Rejected
from bot.domain.message import Notice
from bot.domain.model import Tally
from bot.domain.words import count_of
from bot.errors import SourceError, TransientSourceError
from bot.ingest.pipeline import Pipeline
from bot.ingest.sources.base import Source
from bot.ingest.sources.health import SourceHealth
from bot.ops.hooks import NO_HOOKS, Hooks

log = logging.getLogger(__name__)


class PollResult(StrEnum):
    NOT_MODIFIED = "not_modified"
    NO_CHANGE = "no_change"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    FAILED = "failed"
    LEASE_LOST = "lease_lost"
    """Read while this instance held the count's poll lease, which it no longer held once the
    reading was in: dropped, as another instance polls the count now (on a busy instance, an
    older reading stored after the new holder's newer one would be rejected as going down)."""


def _always() -> bool:
    return True


class Poller:
    def __init__(
        self,
        count_id: str,
        source: Source,
        pipeline: Pipeline,
        health: SourceHealth,
        *,
        sleep: Sleep = asyncio.sleep,
        attempts: int = 3,
        rng: random.Random | None = None,
        metrics: Hooks = NO_HOOKS,
        holds: Callable[[], bool] = _always,
        label: str | None = None,
    ) -> None:
        """``holds``: whether this instance still polls the count (its poll lease), asked
        before a reading goes into the pipeline; ``label``: the count's in the metrics
        (``bot.ops.hooks.count_label``; its id by default)."""
        self.count_id = count_id
        self.label = count_id if label is None else label
        self.source = source
        self.pipeline = pipeline
        self.health = health
        self.sleep = sleep
        self.attempts = attempts
        self.rng = rng
        self.metrics = metrics
        self.holds = holds

    async def poll(self) -> PollResult:
        result = await self._poll()
        self.metrics.polled(self.label, result.value)
        return result

    async def _fetch(self) -> Tally | None:
        """One fetch attempt, counted when it fails."""
        try:
            return await self.source.fetch()
        except SourceError as exc:
            kind = "transient" if isinstance(exc, TransientSourceError) else "permanent"
            self.metrics.fetch_failed(self.label, kind)
            raise

    async def _poll(self) -> PollResult:
        try:
            tally = await retry_transient(
                self._fetch,
                attempts=self.attempts,
                sleep=self.sleep,
                is_transient=lambda exc: isinstance(exc, TransientSourceError),
                retry_after=retry_after_hint,
                rng=self.rng,
            )
        except SourceError as exc:
            await self._failed(exc)
            return PollResult.FAILED
        changed = False
        result = PollResult.NOT_MODIFIED
        if tally is not None and not self.holds():
            log.info("poll lease lost during the poll: reading dropped", extra=self._context())
            self.source.forget()
            return PollResult.LEASE_LOST
        if tally is not None:
            try:
                ingested = await self.pipeline.ingest(tally)
            except BaseException:
                # Not stored (the store failed, or the poll was cancelled mid-write): the source
                # must not answer "not modified" next time, or this tally is never read again.
                self.source.forget()
                raise
            changed = ingested.accepted
            if isinstance(ingested.detection, NoChange):
                result = PollResult.NO_CHANGE
            elif isinstance(ingested.detection, Rejected):
                result = PollResult.REJECTED
                log.warning(
                    "tally rejected: %s",
                    ingested.detection.detail,
                    extra={"count": self.count_id, "source": self.source.name},
                )
            else:
                result = PollResult.ACCEPTED
        failures = self.health.consecutive_failures
        if self.health.record_success(changed):
            log.info("source recovered", extra=self._context())
            await self.pipeline.alert(
                Notice(f"Source {self.source.name} for {self.count_id} is back.", self.count_id)
            )
        elif failures:
            log.info("source answers again after %d failed polls", failures, extra=self._context())
        return result

    def _context(self) -> dict[str, str]:
        return {"count": self.count_id, "source": self.source.name}

    async def _failed(self, exc: SourceError) -> None:
        """Count a failed poll. Logs only the changes of state (failing, stale), so a source
        that stays down does not log on every poll; the rest goes to debug."""
        first = self.health.consecutive_failures == 0
        if self.health.record_failure(exc):
            log.error(
                "source is stale after %d failed polls: %s",
                self.health.consecutive_failures,
                exc,
                extra=self._context(),
            )
            await self.pipeline.alert(
                Notice(
                    f"Source {self.source.name} for {self.count_id} is stale: "
                    f"{count_of(self.health.consecutive_failures, 'failed poll')}; "
                    f"last error: {exc}",
                    self.count_id,
                )
            )
        elif first:
            log.warning("poll failed: %s", exc, extra=self._context())
        else:
            log.debug(
                "poll failed again (%d in a row): %s",
                self.health.consecutive_failures,
                exc,
                extra=self._context(),
            )
