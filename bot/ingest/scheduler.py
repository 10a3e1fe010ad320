"""Counts' polling turns, on APScheduler 3's AsyncIOScheduler, one job per slot of counts.

A count polls every ``interval`` seconds on a grid from its first turn. Counts whose turns fall
in the same slot (same interval, phase from the scheduler's start quantized to ``SLOT_S``) share
one APScheduler job, whose run gives each of them its turn: with 1,000 counts at 2 s that is 10
runs a second instead of 500. One job per count cost 190-250 us of CPU per turn in APScheduler's
job machinery (run times, an executor submit, a task, events), about 11% of a core (issue 26).

A poll runs as a task of its own, so a job run never waits for one: a turn that comes while the
count's poll is still under way (a slow feed, a busy store) makes it poll again as soon as that
one ends, so at most one poll of a count runs at a time and none is lost. A turn that comes late
(a busy instance) is taken however late, never dropped; the turns it missed meanwhile are one
turn, not a burst (``coalesce``). ``pause`` takes a count out of its slot, ``resume`` puts it in
the slot of an interval from now. ``stop`` ends polling and waits for the polls under way to be
cancelled.

Counts added before :meth:`Scheduler.start` take their first turn ``first_in`` seconds after the
start, not after they were added: the app spreads the first polls over the first interval
(``first_in``) while it opens its sources, and a slow start must not bunch them up.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bot.settings.counts import MIN_INTERVAL

log = logging.getLogger(__name__)

SLOT_S = 0.1
"""The grid of phases: counts whose turns (at one interval) fall in the same step of it share a
job, so a turn comes up to this much before the time asked for."""


class _Polling:
    """A count's polls: one at a time, another right after it when a turn came meanwhile."""

    def __init__(self, count_id: str, poll: Callable[[], Awaitable[object]]) -> None:
        self.count_id = count_id
        self.poll = poll
        self.task: asyncio.Task[None] | None = None
        self.again = False
        self.due = -math.inf
        """Its first turn (``time.time()``): a slot's runs before it pass it by."""

    def turn(self) -> None:
        if self.task is not None and not self.task.done():
            self.again = True
            return
        self.task = asyncio.create_task(self._run(), name=f"poll {self.count_id}")

    async def _run(self) -> None:
        while True:
            self.again = False
            try:
                await self.poll()
            except Exception as exc:  # a bug: this poll fails, polling goes on
                log.error("poll failed unexpectedly: %s", exc, exc_info=exc)
            if not self.again:
                return


class _Slot:
    """The counts whose turns share one APScheduler job: each run gives each its turn."""

    def __init__(self, job_id: str, slot_s: float) -> None:
        self.job_id = job_id
        self.slot_s = slot_s
        self.members: dict[str, _Polling] = {}

    async def run(self) -> None:
        soon = time.time() + self.slot_s / 2
        for polling in self.members.values():
            if polling.due <= soon:
                polling.turn()


def _at(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


class Scheduler:
    def __init__(self, *, slot_s: float = SLOT_S) -> None:
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._slot_s = slot_s
        self._origin: float | None = None
        """The start (``time.time()``): the slots' phases count from it."""
        self._polling: dict[str, _Polling] = {}
        self._intervals: dict[str, float] = {}
        self._slots: dict[tuple[float, int], _Slot] = {}
        self._slot_of: dict[str, tuple[float, int]] = {}
        self._waiting: dict[str, float] = {}
        """Before the start: each count's first turn, seconds from the start."""
        self._paused: set[str] = set()
        self._others: dict[str, _Polling] = {}

    def add(
        self,
        count_id: str,
        interval: float,
        poll: Callable[[], Awaitable[object]],
        *,
        first_in: float = 0.0,
    ) -> None:
        """Poll every ``interval`` seconds, the first time ``first_in`` seconds from now (or
        from the start, before it)."""
        if interval < MIN_INTERVAL:
            raise ValueError(f"interval must be at least {MIN_INTERVAL} s")
        self.remove(count_id)
        self._polling[count_id] = _Polling(count_id, poll)
        self._intervals[count_id] = interval
        self._first_in(count_id, first_in)

    def every(self, name: str, interval: float, job: Callable[[], Awaitable[object]]) -> None:
        """Run ``job`` every ``interval`` seconds (from now, or from the start before it), one
        run at a time, as a task of its own as a poll is (``stop`` cancels it and waits for it:
        it never dies inside APScheduler's job); ``bot.delivery.reminders``: the reminders due.
        An APScheduler job of its own, not a count's (``jobs`` leaves it out)."""
        runner = self._others[name] = _Polling(name, job)
        slot = _Slot(name, self._slot_s)
        slot.members[name] = runner
        self._scheduler.add_job(
            slot.run,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id=name,
            name=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=None,
            replace_existing=True,
            next_run_time=_at(time.time()),
        )

    def _first_in(self, count_id: str, seconds: float) -> None:
        """The count's next turn ``seconds`` from now, or from the start before it."""
        if self._origin is None:
            self._waiting[count_id] = seconds
        else:
            self._join(count_id, time.time() + seconds)

    def _join(self, count_id: str, when: float) -> None:
        """Put the count in the slot of its turn at ``when`` (``time.time()``); the job of a
        new slot runs first at that turn, quantized down to the grid."""
        assert self._origin is not None
        interval = self._intervals[count_id]
        polling = self._polling[count_id]
        since = when - self._origin
        phase = math.floor(since % interval / self._slot_s + 1e-6)  # 0.3 / 0.1 is 2.999...
        turn = self._origin + math.floor(since / interval) * interval + phase * self._slot_s
        key = self._slot_of[count_id] = (interval, phase)
        polling.due = turn
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(
                f"poll every {interval:g} s at +{phase * self._slot_s:g} s", self._slot_s
            )
            self._scheduler.add_job(
                slot.run,
                IntervalTrigger(seconds=interval, timezone=UTC),
                id=slot.job_id,
                name=slot.job_id,
                max_instances=1,
                coalesce=True,
                misfire_grace_time=None,  # a turn that comes late is taken, never dropped
                next_run_time=_at(turn),
            )
        else:
            job = self._scheduler.get_job(slot.job_id)
            if job.next_run_time.timestamp() > turn + self._slot_s / 2:  # the slot's run is past
                polling.due = turn + interval
                polling.turn()
        slot.members[count_id] = polling

    def _leave(self, count_id: str) -> None:
        """Take the count out of its slot, and the slot's job out of APScheduler when it was
        the last."""
        self._waiting.pop(count_id, None)
        key = self._slot_of.pop(count_id, None)
        if key is None:
            return
        slot = self._slots[key]
        del slot.members[count_id]
        if not slot.members:
            del self._slots[key]
            self._scheduler.remove_job(slot.job_id)

    def remove(self, count_id: str) -> None:
        self._leave(count_id)
        self._paused.discard(count_id)
        self._intervals.pop(count_id, None)
        self._polling.pop(count_id, None)

    def pause(self, count_id: str) -> None:
        self._leave(count_id)
        self._paused.add(count_id)

    def resume(self, count_id: str) -> None:
        """The count polls again, its next turn an interval from now."""
        self._leave(count_id)
        self._paused.discard(count_id)
        self._first_in(count_id, self._intervals[count_id])

    async def turn(self, count_id: str) -> None:
        """What a slot's job run does for the count when its turn comes: start its poll, or,
        while one is under way, have it poll again right after."""
        self._polling[count_id].turn()

    def jobs(self) -> dict[str, float]:
        """Each count's id and interval in seconds (paused ones too)."""
        return dict(self._intervals)

    def is_paused(self, count_id: str) -> bool:
        return count_id in self._paused

    def slots(self) -> dict[str, int]:
        """Each slot's APScheduler job (its id) and how many counts it turns."""
        return {slot.job_id: len(slot.members) for slot in self._slots.values()}

    def start(self) -> None:
        """Start APScheduler and put each count in the slot of its first turn, ``first_in``
        seconds from now."""
        self._scheduler.start()
        self._origin = time.time()
        waiting, self._waiting = self._waiting, {}
        for count_id, first_in in waiting.items():
            self._join(count_id, self._origin + first_in)

    def shutdown(self) -> None:
        """No more turns (the polls under way go on)."""
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
