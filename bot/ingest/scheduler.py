"""One polling job per count, each a timer on the event loop's own clock.

Each job's turns come every ``interval`` seconds, on a grid from its first turn: a job is one
timer (``loop.call_at``), re-armed for the next turn of the grid when it fires, so a turn costs
a timer and, when the count polls, a task. A poll runs as a task of its own, so a turn never
waits for one: a turn that comes while the count's poll is still under way (a slow feed, a busy
store) makes it poll again as soon as that one ends, so at most one poll of a count runs at a
time and none is lost. A turn that comes late (a busy instance) is taken however late, never
dropped; the turns it missed meanwhile are one turn, not a burst (the next is the grid's next
after now). ``poll_now`` moves a job's next turn to the present, which is how tests (and a push
of "check now") trigger a poll without waiting. ``stop`` ends polling and waits for the polls
under way to be cancelled.

Jobs added before :meth:`Scheduler.start` take their first turn ``first_in`` seconds after the
start, not after they were added: the app spreads the first polls over the first interval
(``first_in``) while it opens its sources, and a slow start must not bunch them up.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable

from bot.settings.counts import MIN_INTERVAL

log = logging.getLogger(__name__)


class _Polling:
    """A count's polls: one at a time, another right after it when a turn came meanwhile."""

    def __init__(self, count_id: str, poll: Callable[[], Awaitable[object]]) -> None:
        self.count_id = count_id
        self.poll = poll
        self.task: asyncio.Task[None] | None = None
        self.again = False

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


class _Job:
    """A :class:`_Polling`'s turns every ``interval`` seconds: one timer, re-armed as it fires
    for the grid's next turn after now."""

    def __init__(self, runner: _Polling, interval: float, first_in: float) -> None:
        self.runner = runner
        self.interval = interval
        self.first_in = first_in
        self.paused = False
        self.when: float | None = None
        """The next turn (the loop's time); None while not armed (not started, or paused)."""
        self.handle: asyncio.TimerHandle | None = None

    def arm(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        self.disarm()
        self.when = when
        self.handle = loop.call_at(when, self._fire, loop)

    def disarm(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        self.handle = None
        self.when = None

    def next_after(self, now: float) -> float:
        """The grid's first turn after ``now`` (the grid runs through the last turn)."""
        assert self.when is not None
        missed = max(0, math.floor((now - self.when) / self.interval))
        return self.when + (missed + 1) * self.interval

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self.arm(loop, self.next_after(loop.time()))
        self.runner.turn()


class Scheduler:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        """The loop the timers run on, once started."""
        self._jobs: dict[str, _Job] = {}
        """Every job, the counts' and :meth:`every`'s."""
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
        """Poll every ``interval`` seconds, the first time ``first_in`` seconds from now (or
        from the start, before it)."""
        if interval < MIN_INTERVAL:
            raise ValueError(f"interval must be at least {MIN_INTERVAL} s")
        polling = self._polling[count_id] = _Polling(count_id, poll)
        self._add(count_id, polling, interval, first_in)

    def every(self, name: str, interval: float, job: Callable[[], Awaitable[object]]) -> None:
        """Run ``job`` every ``interval`` seconds, one run at a time, as a task of its own as a
        poll is (``stop`` cancels it and waits for it); ``bot.delivery.reminders``: the
        reminders due. Not a count's job (``jobs`` leaves it out)."""
        runner = self._others[name] = _Polling(name, job)
        self._add(name, runner, interval, 0.0)

    def _add(self, name: str, runner: _Polling, interval: float, first_in: float) -> None:
        old = self._jobs.pop(name, None)
        if old is not None:
            old.disarm()
        job = self._jobs[name] = _Job(runner, interval, first_in)
        if self._loop is not None:
            job.arm(self._loop, self._loop.time() + first_in)

    def remove(self, count_id: str) -> None:
        job = self._jobs.pop(count_id, None)
        if job is not None:
            job.disarm()
        self._polling.pop(count_id, None)

    def pause(self, count_id: str) -> None:
        job = self._jobs[count_id]
        job.paused = True
        job.disarm()

    def resume(self, count_id: str) -> None:
        """The count polls again, its next turn an interval from now."""
        job = self._jobs[count_id]
        job.paused = False
        job.first_in = job.interval
        if self._loop is not None:
            job.arm(self._loop, self._loop.time() + job.interval)

    async def turn(self, count_id: str) -> None:
        """What the job does when the count's turn comes: start its poll, or, while one is
        under way, have it poll again right after."""
        self._polling[count_id].turn()

    def poll_now(self, count_id: str) -> None:
        job = self._jobs[count_id]
        job.paused = False
        job.first_in = 0.0
        if self._loop is not None:
            job.arm(self._loop, self._loop.time())

    def jobs(self) -> dict[str, float]:
        """Each job's count id and interval in seconds."""
        return {name: job.interval for name, job in self._jobs.items() if name not in self._others}

    def is_paused(self, count_id: str) -> bool:
        job = self._jobs.get(count_id)
        return job is not None and job.paused

    def start(self) -> None:
        """Arm every job: each takes its first turn ``first_in`` seconds from now."""
        loop = self._loop = asyncio.get_running_loop()
        now = loop.time()
        for job in self._jobs.values():
            if not job.paused:
                job.arm(loop, now + job.first_in)

    def shutdown(self) -> None:
        """No more turns (the polls under way go on)."""
        self._loop = None
        for job in self._jobs.values():
            job.disarm()

    async def stop(self) -> None:
        """Stop scheduling, cancel the polls under way and wait for them to end."""
        self.shutdown()
        runners = [*self._polling.values(), *self._others.values()]
        tasks = [p.task for p in runners if p.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
