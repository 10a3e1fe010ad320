"""One polling job per count, on APScheduler 3's AsyncIOScheduler.

Each job runs at its count's own interval. A poll runs as a task of its own, so the job is done
at once and APScheduler never skips a run because the last one is still going ("maximum number
of running instances reached"): a turn that comes while the count's poll is still under way (a
slow feed, a busy store) makes it poll again as soon as that one ends, so at most one poll of a
count runs at a time and none is lost. A turn that comes late (a busy instance) is taken however
late, never dropped ("Run time of job ... was missed"). ``poll_now`` moves a job's next run to
the present, which is how tests (and a push of "check now") trigger a poll without waiting.
``stop`` ends polling and waits for the polls under way to be cancelled.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.settings.counts import MIN_INTERVAL

log = logging.getLogger(__name__)


class _Polling:
    """A count's polls: one at a time, another right after it when a turn came meanwhile."""

    def __init__(self, count_id: str, poll: Callable[[], Awaitable[object]]) -> None:
        self.count_id = count_id
        self.poll = poll
        self.task: asyncio.Task[None] | None = None
        self.again = False

    async def turn(self) -> None:
        if self.task is not None and not self.task.done():
            self.again = True
            return
        self.task = asyncio.create_task(self._run(), name=f"poll {self.count_id}")

    async def _run(self) -> None:
        while True:
            self.again = False
            try:
                await self.poll()
            except Exception as exc:  # a bug: this poll fails, polling goes on (as APScheduler)
                log.error("poll failed unexpectedly: %s", exc, exc_info=exc)
            if not self.again:
                return


class Scheduler:
    def __init__(self) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._polling: dict[str, _Polling] = {}
        self._others: dict[str, _Polling] = {}

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

        polling = self._polling[count_id] = _Polling(count_id, poll)
        self._scheduler.add_job(
            polling.turn,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id=count_id,
            name=f"poll {count_id}",
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,  # a turn that comes late is taken, never dropped
            replace_existing=True,
            next_run_time=datetime.now(UTC) + timedelta(seconds=first_in),
        )

    def every(self, name: str, interval: float, job: Callable[[], Awaitable[object]]) -> None:
        """Run ``job`` every ``interval`` seconds, one run at a time, as a task of its own as a
        poll is (``stop`` cancels it and waits for it: it never dies inside APScheduler's job);
        ``bot.delivery.reminders``: the reminders due. Not a count's job (``jobs`` leaves it
        out)."""
        runner = self._others[name] = _Polling(name, job)
        self._scheduler.add_job(
            runner.turn,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id=name,
            name=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            replace_existing=True,
            next_run_time=datetime.now(UTC),
        )

    def remove(self, count_id: str) -> None:
        if self._scheduler.get_job(count_id) is not None:
            self._scheduler.remove_job(count_id)
        self._polling.pop(count_id, None)

    def pause(self, count_id: str) -> None:
        self._scheduler.pause_job(count_id)

    def resume(self, count_id: str) -> None:
        self._scheduler.resume_job(count_id)

    async def turn(self, count_id: str) -> None:
        """What the job does when the count's turn comes: start its poll, or, while one is
        under way, have it poll again right after."""
        await self._polling[count_id].turn()

    def poll_now(self, count_id: str) -> None:
        self._scheduler.modify_job(count_id, next_run_time=datetime.now(UTC))

    def jobs(self) -> dict[str, float]:
        """Each job's count id and interval in seconds."""
        out = {}
        for job in self._scheduler.get_jobs():
            if job.id not in self._others:
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

    async def stop(self) -> None:
        """Stop scheduling, cancel the polls under way and wait for them to end."""
        self.shutdown()
        runners = [*self._polling.values(), *self._others.values()]
        tasks = [p.task for p in runners if p.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
