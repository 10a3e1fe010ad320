"""Reminders before a scheduled start or restart, queued exactly once through the outbox.

:meth:`Reminders.tick` reads the schedules from the store (never from memory) and, for each
whose reminder is due (``lead`` before its time, and the time not yet come), claims it:
``bot.store.schedules.claim_reminder`` writes the reminder's row and its deliveries in one
transaction, so a restart, a second instance on the same store, or a kill -9 between two ticks
queues it once; the outbox then delivers it like every post (claimed, paced, confirmed after a
lost answer). A reminder whose time came while no instance ran is not sent (it would say
"resumes in -1 hour"); one queued late says how long is really left.

:meth:`Reminders.run_once` is a job of the app's scheduler (``bot.ingest.scheduler``), every
:data:`TICK` seconds; time is the injected clock's. Tests call :meth:`Reminders.tick` with a
fake clock.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta

from bot.base.clock import Clock
from bot.domain.model import Tally, TallyState
from bot.domain.schedule import DEFAULT_REMIND, Schedule, When, reminder_message
from bot.domain.subscription import Platform
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows

log = logging.getLogger(__name__)

TICK = 5.0
"""Seconds between two looks at the schedules: a reminder goes at most this late (a look is one
read of the schedules table: 12 a minute per instance)."""
REMINDERS = "reminders"
"""The scheduler's job that looks."""


class Reminders:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        lead: timedelta = DEFAULT_REMIND,
        on_queued: Callable[[set[Platform]], None] = lambda platforms: None,
    ) -> None:
        """``lead``: ``[defaults] remind_before``, for a count that does not set its own."""
        self.db = db
        self.clock = clock
        self.lead = lead
        self.on_queued = on_queued

    async def tick(self) -> int:
        """Queue the reminders due now; how many deliveries were queued."""
        now = self.clock.now()
        async with self.db.connect() as conn:
            due = [
                s for s in await schedule_rows.every(conn) if s.remind_at(self.lead) <= now < s.at
            ]
        queued = 0
        for schedule in due:
            queued += await self._claim(schedule)
        return queued

    async def _claim(self, schedule: Schedule) -> int:
        now = self.clock.now()
        async with self.db.begin() as conn:
            count = await count_rows.get(conn, schedule.count_id)
            last = None if count is None else await tally_rows.last(conn, count.id)
            if count is None or count.archived or not still_ahead(schedule, last):
                return 0
            payload = reminder_message(count.id, count.title, schedule, now).to_json()
            queued = await schedule_rows.claim_reminder(conn, schedule, payload, now)
        if queued is None:
            return 0
        log.info(
            "reminder queued: %s %s at %s, %d deliveries",
            schedule.count_id, schedule.kind, schedule.at.isoformat(), len(queued),
        )  # fmt: skip
        if queued:
            self.on_queued({d.channel.platform for d in queued})
        return len(queued)

    async def run_once(self) -> None:
        """A tick that logs its failure (the scheduler's job: the next one tries again)."""
        try:
            await self.tick()
        except Exception as exc:  # the store: the next tick tries again
            log.error("reminders failed: %s", exc, exc_info=exc)


def still_ahead(schedule: Schedule, last: Tally | None) -> bool:
    """Whether the count is still waiting for its scheduled time: no figures yet (``starts``),
    or paused (``resumes``). One that started, resumed or ended early gets no reminder."""
    if schedule.kind is When.STARTS:
        return last is None
    return last is not None and last.state is TallyState.PAUSED


async def seed_schedules(db: Database, schedules: Iterable[Schedule], now: datetime) -> None:
    """The configuration file's scheduled times, put in the store for each count that has none
    there and whose time is still ahead (what chat scheduled or cleared since is kept only
    while the store has a schedule: the file's comes back to a count with none)."""
    async with db.begin() as conn:
        for schedule in schedules:
            if schedule.at <= now or await schedule_rows.get(conn, schedule.count_id) is not None:
                continue
            if await count_rows.get(conn, schedule.count_id) is None:
                continue
            await schedule_rows.put(conn, schedule, by="configuration file", at=now)
