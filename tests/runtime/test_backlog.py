"""The commands under way (``bot.commands.inflight.Backlog``): bounded by what the bot can
finish within the stop's grace, at the pace it is seen to finish them, and shared between
places, so that one server's flood never gets another server's commands answered busy; a command
with no room waits briefly for some, in the order they came."""

from __future__ import annotations

import asyncio

import pytest

from bot.commands.inflight import (
    FLOOR,
    MARGIN,
    PLACE_FLOOR,
    RATE_WINDOW_S,
    RESERVE,
    SAMPLES,
    Backlog,
    InOrder,
)


class Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def ticks() -> Ticks:
    return Ticks()


def take(backlog: Backlog, where: str, n: int) -> int:
    """Offer ``n`` commands from ``where``; how many were taken."""
    taken = 0
    for _ in range(n):
        if backlog.room(where):
            backlog.opened(where)
            taken += 1
    return taken


def finish(backlog: Backlog, ticks: Ticks, where: str, n: int, *, each: float) -> None:
    for _ in range(n):
        ticks.now += each
        backlog.closed(where)


def test_at_first_the_floor_is_taken_and_no_more(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    assert take(backlog, "g1", 1000) == FLOOR
    assert backlog.pace() is None


def test_the_pace_is_what_was_finished_while_busy_not_what_was_asked(ticks: Ticks) -> None:
    """Three commands in a quiet minute, then a burst finished 200 a second: the bound is what
    200 a second finish within the grace, not what three in ten seconds would."""
    backlog = Backlog(grace=7.0, monotonic=ticks)
    for _ in range(3):
        take(backlog, "g1", 1)
        finish(backlog, ticks, "g1", 1, each=0.005)
        ticks.now += 3.0
    assert take(backlog, "g1", 1000) == FLOOR
    finish(backlog, ticks, "g1", 50, each=1 / 200)
    pace = backlog.pace()
    assert pace is not None
    assert 195 < pace < 205
    assert backlog.bound() == int(pace * 7.0 * MARGIN)
    room = backlog.bound() - backlog.open
    assert take(backlog, "g1", 2000) == room
    assert backlog.open > 1000


def test_a_slow_pace_takes_no_fewer_than_the_floor(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    take(backlog, "g1", 30)
    finish(backlog, ticks, "g1", 20, each=0.5)  # 2 a second, 10 still under way
    assert backlog.pace() == pytest.approx(2.0)
    assert backlog.bound() == FLOOR


def test_what_finished_long_ago_is_forgotten(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    take(backlog, "g1", 50)
    finish(backlog, ticks, "g1", 50, each=0.001)
    assert backlog.pace() is not None
    ticks.now += RATE_WINDOW_S + 1
    assert backlog.pace() is None
    assert backlog.bound() == FLOOR


def test_a_flood_from_one_place_leaves_room_for_another(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    assert take(backlog, "flooding-server", 5000) == FLOOR
    assert take(backlog, "quiet-server", 5) == 5
    assert take(backlog, "flooding-server", 1) == 0  # still full for the flood
    assert take(backlog, "another-server", PLACE_FLOOR + 5) == PLACE_FLOOR
    finish(backlog, ticks, "quiet-server", 5, each=0.01)
    assert take(backlog, "quiet-server", 1) == 1


def test_many_places_together_take_no_more_than_the_bound_and_the_reserve(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    taken = sum(take(backlog, f"server-{i}", 5) for i in range(1000))
    assert taken == FLOOR + RESERVE
    assert take(backlog, "one-more-server", 1) == 0


async def test_in_order_places_count_against_their_place(ticks: Ticks) -> None:
    order = InOrder(Backlog(monotonic=ticks))
    places = [order.place(("g1", "c1", f"u{i}"), "g1") for i in range(FLOOR)]
    assert not order.room("g1")
    assert order.room("g2")
    for place in places:
        place.leave()
        place.leave()  # twice counts once
    assert order.backlog.open == 0
    assert order.room("g1")


async def test_a_command_with_no_room_waits_for_some_in_the_order_they_came(ticks: Ticks) -> None:
    """Right after a start a second flood comes before any of the first is answered: it waits
    (not acknowledged yet) and is let in as the first finish and their pace is measured, in the
    order its commands came; one that finds no room within its wait is answered busy."""
    backlog = Backlog(grace=7.0, monotonic=ticks)
    order = InOrder(backlog)
    first = []
    for i in range(FLOOR):
        assert await order.admit("g1")
        first.append(order.place(("g1", "c1", f"u{i}"), "g1"))
    assert not await backlog.admit("g1", wait=0)  # none waited for: busy at once
    let_in: list[int] = []

    async def second(i: int) -> None:
        if await order.admit("g1"):
            let_in.append(i)
            order.place(("g1", "c1", f"v{i}"), "g1")

    waiting = [asyncio.create_task(second(i)) for i in range(FLOOR)]
    await asyncio.sleep(0)
    assert let_in == []
    for place in first[: SAMPLES + 1]:  # 10 more after the first at 50 a second: room for 280
        ticks.now += 0.02
        place.leave()
    await asyncio.gather(*waiting)
    assert let_in == list(range(FLOOR))
    assert backlog.open == 2 * FLOOR - SAMPLES - 1


async def test_a_place_waiting_for_room_does_not_hold_up_another(ticks: Ticks) -> None:
    backlog = Backlog(monotonic=ticks)
    assert take(backlog, "flooding-server", 5000) == FLOOR
    flood = asyncio.create_task(backlog.admit("flooding-server", wait=60))
    await asyncio.sleep(0)
    assert await backlog.admit("quiet-server", wait=60)  # the reserve, at once
    flood.cancel()
    with pytest.raises(asyncio.CancelledError):
        await flood
    assert not backlog._waiting


def test_the_time_the_first_takes_is_not_taken_for_the_pace(ticks: Ticks) -> None:
    """Right after a start the first answer takes 2 s (a command's own time, shared with the
    flood's acknowledgements), then they finish 100 a second: the pace is 100 a second."""
    backlog = Backlog(grace=7.0, monotonic=ticks)
    take(backlog, "g1", FLOOR)
    ticks.now += 2.0
    finish(backlog, ticks, "g1", SAMPLES + 1, each=0.01)
    assert backlog.pace() == pytest.approx(100.0)
