"""The limiter that keeps the bot under a platform's windows, driven by a fake clock."""

from __future__ import annotations

import pytest

from bot.clock import FakeClock
from bot.ratelimit import RateLimiter


def test_a_window_lets_limit_through_then_waits_a_window() -> None:
    clock = FakeClock()
    limiter = RateLimiter(3, 1.0, clock, margin=0.0)
    waits = [limiter.reserve()[1] for _ in range(5)]
    assert waits == [0.0, 0.0, 0.0, 1.0, 1.0]


def test_a_slot_counts_from_when_its_request_finished() -> None:
    clock = FakeClock()
    limiter = RateLimiter(2, 1.0, clock, margin=0.0)
    first, _ = limiter.reserve()
    limiter.reserve()
    clock.advance(0.3)  # the first request took 0.3 s to answer
    limiter.done(first)
    _, wait = limiter.reserve()
    assert wait == pytest.approx(1.0)  # 0.3 s + a window, from now (0.3 s) that is 1.0 s


def test_bookings_keep_their_order_and_the_margin_applies() -> None:
    clock = FakeClock()
    limiter = RateLimiter(1, 1.0, clock, margin=0.05)
    waits = [limiter.reserve()[1] for _ in range(3)]
    assert waits == pytest.approx([0.0, 1.05, 2.10])


async def test_slot_context_sleeps_for_its_turn() -> None:
    clock = FakeClock()
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock.advance(seconds)

    limiter = RateLimiter(1, 2.0, clock, margin=0.0)
    for _ in range(3):
        async with limiter.slot(sleep):
            clock.advance(0.5)  # each request takes half a second
    assert slept == pytest.approx([2.0, 2.0])


def test_fill_counts_the_window_as_used() -> None:
    clock = FakeClock()
    limiter = RateLimiter(50, 1.0, clock, margin=0.0)
    limiter.fill()
    assert limiter.reserve()[1] == 1.0
