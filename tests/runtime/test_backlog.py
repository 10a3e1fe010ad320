"""The commands under way (``bot.commands.inflight.Backlog``): bounded by what the bot can
finish within the stop's grace, at the pace it is seen to finish them, and shared between
places, so that one server's flood never gets another server's commands answered busy."""

from __future__ import annotations

import pytest

from bot.commands.inflight import (
    FLOOR,
    MARGIN,
    PLACE_FLOOR,
    RATE_WINDOW_S,
    RESERVE,
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
