"""The limiter that keeps the bot under a platform's windows, driven by a fake clock."""

from __future__ import annotations

import asyncio

import pytest

from bot.delivery.ratelimit import RateLimiter
from bot.testing.clock import FakeClock


class Sleeper:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.slept: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.clock.advance(seconds)


async def test_a_window_lets_limit_through_then_waits_for_the_first_to_age() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limiter = RateLimiter(3, 1.0, clock, margin=0.0)
    for _ in range(5):
        async with limiter.slot(sleep):
            clock.advance(0.1)  # each request takes 0.1 s to answer
    # three go one after another (0.1 s each); the fourth waits until the first answer is a
    # window old (at 1.1 s); by the fifth's turn (1.2 s) the second's answer is a window old
    assert sleep.slept == pytest.approx([0.8])


async def test_a_slot_counts_from_when_its_request_finished() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limiter = RateLimiter(1, 1.0, clock, margin=0.0)
    async with limiter.slot(sleep):
        clock.advance(0.3)  # the request took 0.3 s to answer
    async with limiter.slot(sleep):
        pass
    assert sleep.slept == pytest.approx([1.0])


async def test_a_request_in_flight_holds_its_slot_until_it_answers() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1.0, clock, margin=0.0)
    slow = await limiter.acquire(Sleeper(clock))
    clock.advance(5.0)  # no answer yet: it may reach the platform any moment
    assert limiter.delay() == pytest.approx(1.0)
    limiter.done(slow)
    clock.advance(0.5)
    assert limiter.delay() == pytest.approx(0.5)


async def test_the_margin_applies() -> None:
    clock = FakeClock()
    sleep = Sleeper(clock)
    limiter = RateLimiter(1, 1.0, clock, margin=0.05)
    for _ in range(3):
        async with limiter.slot(sleep):
            pass
    assert sleep.slept == pytest.approx([1.05, 1.05])


async def test_turns_are_taken_in_arrival_order() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1.0, clock, margin=0.0)
    order: list[int] = []

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)

    async def request(i: int) -> None:
        async with limiter.slot(sleep):
            order.append(i)

    await asyncio.gather(*(request(i) for i in range(5)))
    assert order == [0, 1, 2, 3, 4]


def test_requests_made_outside_are_counted() -> None:
    clock = FakeClock()
    limiter = RateLimiter(3, 1.0, clock, margin=0.0)
    limiter.note(2)
    assert limiter.delay() == 0.0
    limiter.note(1)
    assert limiter.delay() == 1.0


async def test_an_urgent_request_goes_before_the_routine_ones_waiting() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1.0, clock, margin=0.0)
    order: list[str] = []

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)
        await asyncio.sleep(0)  # the others queue meanwhile

    async def request(name: str, *, urgent: bool = False) -> None:
        async with limiter.slot(sleep, urgent=urgent):
            order.append(name)

    posts = [asyncio.create_task(request(f"post {i}")) for i in range(5)]
    await asyncio.sleep(0)  # all five are waiting (the first for nothing)
    reply = asyncio.create_task(request("reply", urgent=True))
    await asyncio.gather(*posts, reply)
    # post 2 had been handed the turn when the reply came; the reply goes next, before posts
    # 3 and 4, which had waited longer
    assert order == ["post 0", "post 1", "post 2", "reply", "post 3", "post 4"]


async def test_a_cancelled_wait_hands_the_turn_on() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1.0, clock, margin=0.0)
    gate = asyncio.Event()

    async def sleep(seconds: float) -> None:
        await gate.wait()
        clock.advance(seconds)

    async with limiter.slot(sleep):
        pass
    waiting = asyncio.create_task(limiter.acquire(sleep))  # holds the turn, sleeping
    behind = asyncio.create_task(limiter.acquire(sleep, urgent=True))
    await asyncio.sleep(0)
    waiting.cancel()
    gate.set()
    slot = await behind  # got the turn the cancelled one held
    limiter.done(slot)
    assert waiting.cancelled()
