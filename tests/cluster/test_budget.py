"""One rate budget shared by the instances of a PostgreSQL store: turns handed out in order,
one span after another whoever asks, and held for everyone after a 429."""

from __future__ import annotations

import pytest

from bot.delivery.pacing import Window
from bot.delivery.shared import SharedBudget
from bot.store import Database, buckets
from bot.testing.clock import FakeClock
from tests.cluster.test_claims import T0, two

__all__ = ["two"]
pytestmark = pytest.mark.postgres
SLACK = 0.05
"""Seconds the database's own clock may move on between two statements of a test."""


async def test_instances_reserve_consecutive_turns_and_a_hold_holds_them_all(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    async with a.begin() as conn:
        assert await buckets.reserve(conn, "discord:global", turns=5, every=0.02) < SLACK
    async with b.begin() as conn:  # the other instance's turns start after those 5
        delay = await buckets.reserve(conn, "discord:global", turns=5, every=0.02)
        assert 0.1 - SLACK < delay <= 0.1
        assert await buckets.reserve(conn, "slack:chat.postMessage", turns=1, every=0.2) < SLACK
    async with a.begin() as conn:
        await buckets.hold(conn, "discord:global", 3.0)
    async with b.begin() as conn:
        assert await buckets.reserve(conn, "discord:global", turns=5, every=0.02) > 3.0 - SLACK


async def test_a_budget_paces_an_instance_by_its_reserved_turns() -> None:
    """The instance's side, on a fake clock: the store's side (above) is the same schedule on
    the database's clock, which a fake clock cannot move."""
    clock = FakeClock(T0)
    starts: list[float] = []
    row = {"next_at": 0.0}

    async def sleep(seconds: float) -> None:
        clock.advance(seconds)

    async def reserve(name: str, turns: int, every: float) -> float:
        now = clock.monotonic()
        first = max(row["next_at"], now)
        row["next_at"] = first + turns * every
        return first - now

    async def hold(name: str, seconds: float) -> None:
        row["next_at"] = max(row["next_at"], clock.monotonic() + seconds)

    one = SharedBudget("discord:global", Window(50, 1.0), clock, sleep, reserve, hold)
    other = SharedBudget("discord:global", Window(50, 1.0), clock, sleep, reserve, hold)
    assert one.chunk == 4  # a tenth of a second's worth, spaced for 45 a second
    for i in range(98):
        await (one if i % 8 < 4 else other).turn()  # each uses its own reserved turns
        starts.append(clock.monotonic())
    assert (one.reservations, other.reservations) == (13, 12)
    in_a_second = max(sum(1 for t in starts if s <= t < s + 1.0) for s in starts)
    assert 45 <= in_a_second <= 46  # under the budget by its safety margin, no more
    await one.hold(3.0)
    before = clock.monotonic()
    await other.turn()  # its reserved turns are spent: the next ones come after the hold
    await other.turn()
    await other.turn()
    await other.turn()
    await other.turn()
    assert clock.monotonic() - before >= 3.0
