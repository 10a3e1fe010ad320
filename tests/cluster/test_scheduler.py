"""No poll is skipped: a turn that comes while the count's poll is still under way (a slow feed,
a busy store) makes it poll again as soon as that one ends; never two at once."""

from __future__ import annotations

import asyncio
import time

from bot.ingest.scheduler import Scheduler


async def test_a_turn_during_a_slow_poll_polls_again_right_after_it() -> None:
    scheduler = Scheduler()
    release = asyncio.Event()
    started: list[int] = []
    running = 0
    most = 0
    two_done = asyncio.Event()

    async def poll() -> object:
        nonlocal running, most
        running += 1
        most = max(most, running)
        started.append(len(started))
        await release.wait()
        running -= 1
        if len(started) == 2 and not running:
            two_done.set()
        return None

    scheduler.add("slow", 15, poll)
    await scheduler.turn("slow")
    await asyncio.sleep(0)
    assert started == [0]
    for _ in range(3):  # three turns come while it is stuck in the store: one more poll
        await scheduler.turn("slow")
    release.set()
    await asyncio.wait_for(two_done.wait(), timeout=5)
    assert (started, most) == ([0, 1], 1)
    release.clear()
    await scheduler.turn("slow")
    await asyncio.sleep(0)
    assert started == [0, 1, 2]
    await scheduler.stop()  # the poll under way is cancelled and waited for
    assert running == 1  # cancelled inside it, never finished


def opening_sources(seconds: float) -> None:
    """The app opening a thousand sources before it starts the scheduler: the loop blocked."""
    time.sleep(seconds)


async def test_the_first_turns_are_counted_from_the_start_not_from_when_they_were_added() -> None:
    """The app spreads the first polls over the first interval (``first_in``) while it opens
    its sources: a slow start must not bunch them all at the start."""
    scheduler = Scheduler()
    polled: list[str] = []

    async def poll(name: str) -> None:
        polled.append(name)

    scheduler.add("now", 15, lambda: poll("now"))
    scheduler.add("later", 15, lambda: poll("later"), first_in=0.2)
    opening_sources(0.3)
    scheduler.start()
    for _ in range(20):
        await asyncio.sleep(0)
    assert polled == ["now"]
    await scheduler.stop()


async def test_counts_whose_turns_fall_in_one_slot_share_one_apscheduler_job() -> None:
    """1,000 counts at 2 s are 20 jobs of 50, not 1,000 jobs (APScheduler's machinery costs
    about 200 us a job run); a slot's job goes when its last count does."""
    scheduler = Scheduler()

    async def poll() -> None:
        return None

    for i in range(1000):
        scheduler.add(f"c{i}", 2, poll, first_in=i * 2 / 1000)
    scheduler.add("slow", 15, poll)
    scheduler.start()
    slots = scheduler.slots()
    assert len(slots) == 21
    assert sorted(slots.values()) == [1] + [50] * 20
    assert len(scheduler.jobs()) == 1001
    scheduler.pause("slow")
    assert scheduler.is_paused("slow")
    assert len(scheduler.slots()) == 20
    for i in range(50):
        scheduler.remove(f"c{i}")
    assert len(scheduler.slots()) == 19
    await scheduler.stop()


async def test_a_count_that_joins_a_slot_after_its_run_takes_its_first_turn_now() -> None:
    """Its slot's job runs next an interval later: the count's first turn must not wait for
    it."""
    scheduler = Scheduler(slot_s=5)  # wide: both turns fall in the first slot however slow
    polled: list[str] = []
    turns = {"first": asyncio.Event(), "second": asyncio.Event()}

    async def poll(name: str) -> None:
        polled.append(name)
        turns[name].set()

    scheduler.add("first", 15, lambda: poll("first"))
    scheduler.start()
    await asyncio.wait_for(turns["first"].wait(), timeout=2)
    scheduler.add("second", 15, lambda: poll("second"))
    await asyncio.wait_for(turns["second"].wait(), timeout=2)
    assert polled == ["first", "second"]
    assert list(scheduler.slots().values()) == [2]
    await scheduler.stop()
