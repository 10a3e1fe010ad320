"""Rate limits as buckets derived per request: which buckets a route draws from, the pacer
waiting for all of them, a 429 holding a platform-wide route, and the configuration's
``limits`` tables. Driven by a fake clock."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import random
from pathlib import Path

import pytest

from adapters.discord.delivery import DISCORD_LIMITS
from adapters.slack.delivery import SLACK_LIMITS
from bot.delivery.pacing import ROOM, Bucket, Limits, Pacer, Route, Window, answered
from bot.delivery.ratelimit import RECOVER_AFTER
from bot.errors import ConfigError
from bot.settings.loader import parse
from bot.testing.clock import FakeClock
from tests.test_ratelimit import Sleeper

LIMITS = Limits(
    routes={
        "post": (Bucket("posts", Window(2, 1.0)), Bucket("per channel", Window(1, 1.0), True)),
        "read": (Bucket("reads", Window(1, 60.0)),),
    },
    every=(Bucket("global", Window(3, 1.0)),),
)


def test_a_route_draws_from_its_own_buckets_and_every_requests_channel_ones_first() -> None:
    names = [b.name for b in LIMITS.buckets(Route("post", "c1"))]
    assert names == ["per channel", "global", "posts"]
    assert [b.name for b in LIMITS.buckets(Route("read"))] == ["global", "reads"]
    assert [b.name for b in LIMITS.buckets(Route("other"))] == ["global"]


async def test_the_pacer_waits_for_every_bucket_of_a_request() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    pacer = Pacer(LIMITS, clock, sleep)
    for channel in ("c1", "c2", "c1"):  # posts: 2 a second overall, 1 per channel
        async with pacer.slot(Route("post", channel)):
            pass
    assert sum(sleep.slept) == pytest.approx(1.002)  # the third waited for both windows
    async with pacer.slot(Route("read")):
        pass
    async with pacer.slot(Route("read")):
        pass
    # the first read half a global spacing after the late third post (even spacing), the
    # second a whole window of reads after the first
    assert sum(sleep.slept) == pytest.approx(1.002 + 1.002 / 6 + 60.12)


async def test_a_429_holds_a_platform_wide_route_but_not_a_channels() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    pacer = Pacer(LIMITS, clock, sleep)
    pacer.hold(Route("post", "c1"), 30.0)  # most likely c1's own limit: nobody else waits
    async with pacer.slot(Route("post", "c2")):
        pass
    assert sleep.slept == []
    pacer.hold(Route("read"), 30.0)  # a tier of the whole workspace
    async with pacer.slot(Route("read")):
        pass
    assert sleep.slept == pytest.approx([30.0])


async def test_startup_requests_count_against_every_request() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limits = Limits(every=(Bucket("global", Window(3, 1.0)),), startup_requests=3)
    async with Pacer(limits, clock, sleep).slot(Route("anything")):
        pass
    assert sleep.slept == pytest.approx([1.002])  # the start-up used the first window


def test_the_configuration_changes_buckets_by_name(tmp_path: Path) -> None:
    cfg = parse(
        {
            "discord": {"limits": {"global": [500, 1]}},
            "slack": {
                "limits": {"chat.postMessage": [100, 1.0], "conversations.history": [500, 60]}
            },
        },
        tmp_path / "t.toml",
    )
    discord = DISCORD_LIMITS.with_windows(cfg.settings("discord").limits)
    assert discord.every == (Bucket("global", Window(500, 1.0), reserved=3),)
    assert discord.for_holder().every == (Bucket("global", Window(497, 1.0), reserved=3),)
    slack = SLACK_LIMITS.with_windows(cfg.settings("slack").limits)
    found = {b.name: b.window for b in slack.buckets(Route("chat.postMessage", "C1"))}
    assert found == {
        "chat.postMessage per channel": Window(1, 1.0),
        "chat.postMessage": Window(100, 1.0),
    }
    assert slack.named()["conversations.history"].window == Window(500, 60.0)
    with pytest.raises(ConfigError, match=r"no bucket named chat\.postMesage"):
        SLACK_LIMITS.with_windows({"chat.postMesage": Window(1, 1.0)})


@pytest.mark.parametrize("value", [[0, 1], [5], [5, 0], ["5", 1], [True, 1], 5])
def test_a_bad_limits_entry_is_a_clear_error(tmp_path: Path, value: object) -> None:
    with pytest.raises(
        ConfigError, match=r"slack\.limits\.\"chat\.update\": expected \[requests, seconds\]"
    ):
        parse({"slack": {"limits": {"chat.update": value}}}, tmp_path / "t.toml")


async def test_a_platform_wide_bucket_spaces_its_requests_evenly_a_channels_does_not() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limits = Limits(
        routes={"post": (Bucket("per channel", Window(5, 5.0), True),)},
        every=(Bucket("global", Window(4, 1.0)),),
    )
    pacer = Pacer(limits, clock, sleep)
    starts = []
    for channel in ("c1", "c1", "c2", "c2"):
        async with pacer.slot(Route("post", channel)):
            starts.append(clock.monotonic())
    # a quarter of a window apart (the global bucket), not four at once
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps == pytest.approx([1.002 / 4] * 3)


async def test_the_limiters_of_channels_gone_quiet_are_forgotten() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limits = Limits(
        routes={"post": (Bucket("per channel", Window(5, 5.0), True),)},
        every=(Bucket("global", Window(1000, 1.0)),),
    )
    pacer = Pacer(limits, clock, sleep)
    for i in range(5000):  # a fan-out to 5,000 channels, one message each
        async with pacer.slot(Route("post", f"c{i}")):
            pass
        clock.advance(0.01)
    assert pacer.limiters() < 800  # those of the last window's channels, not one per channel


async def test_a_global_429_lowers_the_limit_to_what_the_platform_let_through() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    pacer = Pacer(Limits(every=(Bucket("global", Window(50, 1.0)),)), clock, sleep)
    for _ in range(30):  # 30 went through within the platform's window, then a 429
        async with pacer.slot(Route("post")):
            pass
    assert pacer.limit_of("global") == 50
    pacer.said("global", 0.4)  # its window began 0.6 s ago: what ended since counts
    assert pacer.limit_of("global") == 30
    began = clock.monotonic()
    async with pacer.slot(Route("post")):
        assert clock.monotonic() - began >= 0.4  # held for what it said
    pacer.said("global", 0.9)  # a later one does not raise it
    assert pacer.limit_of("global") <= 30
    assert pacer.limit_of("no such bucket") == 0


async def test_a_request_waiting_for_one_methods_budget_never_holds_up_another_method() -> None:
    clock = FakeClock()
    waits: list[float] = []
    waiting = asyncio.Event()

    async def sleep(seconds: float) -> None:
        if seconds < 1:  # posts' even spacing
            clock.advance(seconds)
            return
        waits.append(seconds)  # a wait for the uploads' budget: it outlasts the test
        waiting.set()
        await asyncio.Event().wait()

    limits = Limits(
        routes={
            "upload": (Bucket("uploads", Window(1, 60.0)),),
            "post": (
                Bucket("posts", Window(100, 1.0)),
                Bucket("per channel", Window(1, 1.0), True),
            ),
        }
    )
    pacer = Pacer(limits, clock, sleep)

    async def request(route: Route) -> None:
        async with pacer.slot(route):
            pass

    # More uploads than the room holds, all but the first waiting a minute for the budget.
    uploads = [asyncio.create_task(request(Route("upload", f"c{i}"))) for i in range(ROOM + 2)]
    await asyncio.wait_for(waiting.wait(), timeout=5)
    try:
        for i in range(3):  # posts elsewhere go at once, whatever the uploads wait for
            await asyncio.wait_for(request(Route("post", f"p{i}")), timeout=5)
        assert len(waits) == 1
    finally:
        for task in uploads:
            task.cancel()
        await asyncio.gather(*uploads, return_exceptions=True)


async def test_a_lowered_limit_climbs_back_to_the_setting_once_429s_stop() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    pacer = Pacer(Limits(every=(Bucket("global", Window(50, 1.0)),)), clock, sleep)
    for _ in range(10):
        async with pacer.slot(Route("post")):
            pass
    pacer.said("global", 0.5)
    assert pacer.limit_of("global") == 10
    clock.advance(RECOVER_AFTER * 1.002 - 0.01)
    assert pacer.limit_of("global") == 10  # not at once: the platform may mean it
    seen = []
    for _ in range(12):
        clock.advance(1.002)
        seen.append(pacer.limit_of("global"))
    assert seen == [15, 20, 25, 30, 35, 40, 45, 50, 50, 50, 50, 50]  # a tenth a window
    for _ in range(20):
        async with pacer.slot(Route("post")):
            pass
    pacer.said("global", 0.5)  # shown smaller again: lowered, and it waits again
    assert pacer.limit_of("global") == 20
    clock.advance(1.0)
    assert pacer.limit_of("global") == 20
    pacer.reset()  # a takeover: the setting
    assert pacer.limit_of("global") == 50


async def test_after_a_storm_of_global_429s_one_instance_sends_at_the_full_rate_again() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    pacer = Pacer(DISCORD_LIMITS, clock, sleep)
    began = clock.monotonic()
    while clock.monotonic() - began < 20.0:  # 20 s of global 429s saying to wait 2 s
        async with pacer.slot(Route("post")):
            clock.advance(0.01)
        pacer.said("global", 2.0)
    assert pacer.limit_of("global") == 50  # a hold, not the rest of a window: nothing learned
    clock.advance(2.0)
    began = clock.monotonic()
    for _ in range(100):  # no fault after the storm
        async with pacer.slot(Route("post")):
            pass
    assert clock.monotonic() - began < 2.1  # 50 a second, not 1


async def test_a_slot_counts_from_the_answers_arrival_not_from_the_end_of_its_block() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limits = Limits(
        routes={"post": (Bucket("per channel", Window(1, 5.0), True),)},
        every=(Bucket("global", Window(1, 1.0)),),
    )
    pacer = Pacer(limits, clock, sleep)
    answered()  # outside any request's slots: nothing to close
    async with pacer.slot(Route("post", "c1")):
        clock.advance(0.01)  # the answer's headers came
        answered()
        clock.advance(0.5)  # the client read the body, the bot handled it
    async with pacer.slot(Route("post", "c2")):
        pass
    async with pacer.slot(Route("post", "c1")):  # the channel's window, from the answer too
        pass
    assert sleep.slept == pytest.approx([0.01 + 1.002 - 0.51, 0.01 + 5.01 - 1.012])


class Timeline:
    """Virtual time for concurrent requests: each sleep ends at its own moment, in order, and
    time moves on only once every task waits (nothing here waits on anything real)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self._due: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    async def sleep(self, seconds: float) -> None:
        woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        at = self.clock.monotonic() + max(0.0, seconds)
        heapq.heappush(self._due, (at, next(self._order), woken))
        await woken

    async def run(self, tasks: list[asyncio.Task[None]]) -> None:
        while not all(t.done() for t in tasks):
            for _ in range(100):  # every task runs on until it waits
                await asyncio.sleep(0)
            if self._due:
                at, _, woken = heapq.heappop(self._due)
                self.clock.advance(max(0.0, at - self.clock.monotonic()))
                woken.set_result(None)
        await asyncio.gather(*tasks)


async def fan_out(
    limit: int, trips: list[tuple[float, float, float]], *, answers: bool = True
) -> list[float]:
    """When each request of a fan-out paced for ``limit`` a second arrived at the platform:
    each takes its ``(there, back, handling)`` seconds; ``answers``: the adapter reports the
    answer's arrival (``answered``)."""
    clock = FakeClock()
    timeline = Timeline(clock)
    pacer = Pacer(Limits(every=(Bucket("global", Window(limit, 1.0)),)), clock, timeline.sleep)
    arrived: list[float] = []

    async def request(n: int, there: float, back: float, handling: float) -> None:
        async with pacer.slot(Route("post", f"c{n}")):
            await timeline.sleep(there)
            arrived.append(clock.monotonic())
            await timeline.sleep(back)
            if answers:
                answered()
            await timeline.sleep(handling)

    tasks = [asyncio.create_task(request(n, *trip)) for n, trip in enumerate(trips)]
    await timeline.run(tasks)
    return sorted(arrived)


def most_in_a_second(arrived: list[float]) -> int:
    return max(sum(1 for u in arrived if t <= u < t + 1.0) for t in arrived)


async def test_a_holder_closing_its_slots_at_the_answers_sends_47_at_nearly_47_a_second() -> None:
    # 2.5 ms each way, 15 ms for the client and the bot to handle the answer (a busy process)
    trips = [(0.0025, 0.0025, 0.015)] * 300
    arrived = await fan_out(47, trips)
    assert most_in_a_second(arrived) <= 47
    steady = arrived[47:]
    rate = (len(steady) - 1) / (steady[-1] - steady[0])
    assert rate == pytest.approx(47 / (1.002 + 0.005), rel=0.005)  # 46.7 a second
    slow = await fan_out(47, trips, answers=False)  # closed once handled: 46.0 a second
    assert (len(slow) - 48) / (slow[-1] - slow[47]) == pytest.approx(47 / 1.022, rel=0.005)


async def test_no_trip_or_handling_lets_more_than_the_limit_arrive_in_a_second() -> None:
    draw = random.Random(26)
    for _ in range(3):
        trips = [
            (draw.uniform(0, 0.05), draw.uniform(0, 0.05), draw.uniform(0, 0.1)) for _ in range(200)
        ]
        assert most_in_a_second(await fan_out(47, trips)) <= 47
