"""One polling job per count, on APScheduler 3's AsyncIOScheduler.

Each job runs at its count's own interval, one run at a time (``max_instances=1``); runs missed
while a slow poll was still going are coalesced into one. ``poll_now`` moves a job's next run to
the present, which is how tests (and a push of "check now") trigger a poll without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.settings.counts import MIN_INTERVAL


class Scheduler:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)

    def add(
        self,
        count_id: str,
        interval: float,
        poll: Callable[[], Awaitable[object]],
        *,
        first_in: float = 0.0,
    ) -> None:
        """Poll every ``interval`` seconds, the first time ``first_in`` seconds from now."""
        if interval < MIN_INTERVAL:
            raise ValueError(f"interval must be at least {MIN_INTERVAL} s")

        async def job() -> None:
            # Stopping cancels a poll that is under way: that is the end of it, not an error
            # for APScheduler to log with a traceback.
            with contextlib.suppress(asyncio.CancelledError):
                await poll()

        self._scheduler.add_job(
            job,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id=count_id,
            name=f"poll {count_id}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(interval)),
            replace_existing=True,
            next_run_time=datetime.now(UTC) + timedelta(seconds=first_in),
        )

    def remove(self, count_id: str) -> None:
        if self._scheduler.get_job(count_id) is not None:
            self._scheduler.remove_job(count_id)

    def pause(self, count_id: str) -> None:
        self._scheduler.pause_job(count_id)

    def resume(self, count_id: str) -> None:
        self._scheduler.resume_job(count_id)

    def poll_now(self, count_id: str) -> None:
        self._scheduler.modify_job(count_id, next_run_time=datetime.now(UTC))

    def jobs(self) -> dict[str, float]:
        """Each job's count id and interval in seconds."""
        out = {}
        for job in self._scheduler.get_jobs():
            out[job.id] = job.trigger.interval.total_seconds()
        return out

    def is_paused(self, count_id: str) -> bool:
        job = self._scheduler.get_job(count_id)
        return job is not None and job.next_run_time is None

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)
