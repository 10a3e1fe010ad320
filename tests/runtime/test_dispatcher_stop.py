"""The dispatcher stops when it is cancelled (``App.aclose``), whatever it was waiting for.

On Python 3.11, ``asyncio.wait_for`` swallows a cancellation that comes in the same turn of the
loop as the end of what it waits for (CPython gh-86296, fixed in 3.12): the worker loop then
carried on as if nothing had been asked of it, and at its next wait with nothing due (no
timeout) it waited for ever, and so did the app's close, with no timer left on the loop. The
worker's waits are ``asyncio.timeout`` blocks instead, which let a cancellation through.
Here the worker is woken and cancelled in the same turn of the loop, while it waits for a
channel being sent (``Dispatcher._drain``) and while it waits, idle, for a delivery due later
(``Dispatcher._run_platform``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bot.delivery.worker import Dispatcher
from bot.domain.message import Outgoing
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import subscriptions as sub_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests import hangs
from tests.helpers import tally

CONSOLE = Platform("console")
CHAN = ChannelRef(CONSOLE, "local", "c1")
STOPS_WITHIN_S = 10.0
"""What a test waits for the worker to end once cancelled (it ends in a few turns of the loop;
the old worker never did)."""
WAITING = {"woken", "wait", "wait_for"}
"""The frames of the worker's wait for a wake-up or a timeout (``wait_for``: the old one's)."""


async def no_sleep(seconds: float) -> None:
    return None


class Held(RecordingAdapter):
    """Holds every post until ``go`` is set; ``at_post`` is set once one is held."""

    def __init__(self) -> None:
        super().__init__()
        self.at_post = asyncio.Event()
        self.go = asyncio.Event()

    async def post(self, channel: ChannelRef, content: Outgoing, **kw: Any) -> str:
        self.at_post.set()
        await self.go.wait()
        return await super().post(channel, content, **kw)


async def subscribed(db: Database, clock: FakeClock) -> Pipeline:
    async with db.begin() as conn:
        await sub_rows.subscribe(conn, CHAN, "bessemer-2021", Mode.ALL, by="t", at=clock.now())
    return Pipeline(db, clock)


async def parked_in(function: str, ready: Callable[[], bool]) -> None:
    """Until ``ready()`` and the platform's worker loop waits in ``function`` itself (for a
    wake-up or a timeout)."""
    async with asyncio.timeout(STOPS_WITHIN_S):
        while True:
            await asyncio.sleep(0)
            for task in asyncio.all_tasks():
                if task.get_name() != f"deliver {CONSOLE}":
                    continue
                names = [frame.f_code.co_name for frame in hangs.awaiting(task)]
                below = names[names.index(function) + 1 :] if function in names else []
                if ready() and below and set(below) <= WAITING:
                    return


async def stopped(dispatcher: Dispatcher, worker: asyncio.Task[None]) -> None:
    """Wake the worker and cancel it in the same turn of the loop; it must end, cancelled."""
    dispatcher.wake({CONSOLE})
    worker.cancel()
    await asyncio.wait([worker], timeout=STOPS_WITHIN_S)
    went_on = not worker.done()
    if went_on:  # cancelled again, not woken: it stops, and the test ends to say so
        worker.cancel()
        await asyncio.wait([worker], timeout=STOPS_WITHIN_S)
    assert not went_on, "the worker loop went on after it was cancelled"
    assert worker.cancelled()


async def test_cancelled_as_it_is_woken_while_a_channel_is_being_sent_it_stops(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline = await subscribed(sqlite_db, clock)
    adapter = Held()
    dispatcher = Dispatcher(sqlite_db, {CONSOLE: adapter}, clock, sleep=no_sleep)
    await pipeline.ingest(tally(84, 201))
    worker = asyncio.create_task(dispatcher.run())
    await parked_in("_drain", adapter.at_post.is_set)  # for its channel, held in post
    await stopped(dispatcher, worker)


async def test_cancelled_as_it_is_woken_while_waiting_for_a_later_delivery_it_stops(
    sqlite_db: Database, clock: FakeClock
) -> None:
    pipeline = await subscribed(sqlite_db, clock)
    adapter = RecordingAdapter()
    adapter.transient_failures = 1  # the post fails once: its retry is due later
    dispatcher = Dispatcher(sqlite_db, {CONSOLE: adapter}, clock, sleep=no_sleep)
    await pipeline.ingest(tally(84, 201))
    worker = asyncio.create_task(dispatcher.run())
    await parked_in("_run_platform", lambda: dispatcher.stats.retried == 1)  # for the retry
    await stopped(dispatcher, worker)
