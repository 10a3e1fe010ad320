"""One rate budget per bot shared by the instances of a PostgreSQL store: the whole budget of a
platform is leased to one instance at a time, handed on a window after its last request, per
bot token (two bots on one store do not share it); a 429 holds it for everyone."""

from __future__ import annotations

import pytest

from adapters.discord.delivery import DISCORD_LIMITS, GLOBAL
from adapters.discord.places import POST_ROUTE
from bot.delivery.pacing import Pacer, Route
from bot.delivery.shared import PlatformBudget, SendingLease
from bot.domain.subscription import Platform
from bot.errors import TransientDeliveryError
from bot.settings.secrets import Secret
from bot.store import Database, buckets
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.cluster.test_claims import T0, two
from tests.test_ratelimit import Sleeper

__all__ = ["two"]
pytestmark = pytest.mark.postgres
SLACK = 0.05
"""Seconds the database's own clock may move on between two statements of a test."""
DISCORD = Platform("discord")


async def test_one_instance_at_a_time_holds_a_platforms_budget_and_hands_it_on_a_window_later(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    key = Secret("DISCORD_TOKEN", "token-of-bot-one").fingerprint()
    mine = SendingLease(a, DISCORD, key, "i0", clock, seconds=3.0)
    other = SendingLease(b, DISCORD, key, "i1", clock, seconds=3.0)
    assert await mine.take()
    assert not await other.take()  # one at a time
    with pytest.raises(TransientDeliveryError, match="no longer holds"):
        await other.ensure()  # nothing goes out under a lease not held
    clock.advance(1.5)
    await mine.renew()
    clock.advance(1.5)
    assert mine.held
    assert not await other.take()
    await mine.hand_back(1.01)  # nothing left to send
    assert not mine.held
    assert not await other.take()  # the last requests' window is not over yet
    clock.advance(1.02)
    assert await other.take()
    assert other.held
    assert not await mine.take()
    clock.advance(3.01)  # the holder died: it renews no more
    assert not other.held
    assert await mine.take()


async def test_two_bots_on_one_store_each_have_their_own_budget(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    one = Secret("DISCORD_TOKEN", "token-of-bot-one")
    two_ = Secret("DISCORD_TOKEN", "token-of-bot-two")
    first = SendingLease(a, DISCORD, one.fingerprint(), "i0", clock, seconds=3.0)
    second = SendingLease(b, DISCORD, two_.fingerprint(), "i1", clock, seconds=3.0)
    assert await first.take()
    assert await second.take()
    assert first.name != second.name
    for name in (first.name, second.name):
        assert "token-of-bot" not in name  # a fingerprint, never the token


async def test_a_hold_after_a_429_holds_the_budget_for_every_instance(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    async with b.connect() as conn:
        assert await buckets.held_for(conn, "discord:key:global") == 0.0
    async with a.begin() as conn:
        await buckets.hold(conn, "discord:key:global", 3.0)
    async with b.connect() as conn:
        assert 3.0 - SLACK < await buckets.held_for(conn, "discord:key:global") <= 3.0
        assert await buckets.held_for(conn, "discord:other:global") == 0.0
    async with a.begin() as conn:
        await buckets.hold(conn, "discord:key:global", 1.0)  # a shorter hold shortens nothing
    async with b.connect() as conn:
        assert await buckets.held_for(conn, "discord:key:global") > 2.0


async def test_a_non_holders_429_does_not_lower_the_pace_it_takes_the_lease_over_with(
    two: tuple[Database, Database],
) -> None:
    a, b = two
    clock = FakeClock(T0)
    sleep = Sleeper(clock)
    adapter = RecordingAdapter("discord", DISCORD_LIMITS)
    holder = PlatformBudget(a, DISCORD, adapter, "i0", clock, sleep, seconds=3.0)
    standby = PlatformBudget(b, DISCORD, adapter, "i1", clock, sleep, seconds=3.0)
    pacer = Pacer(DISCORD_LIMITS, clock, sleep, standby.buckets)  # the standby's, as wired
    assert await holder.leased()
    assert not await standby.leased()
    # The standby starts a shard while the holder sends: its start-up requests draw a global
    # 429 that says nothing about its own pace (it sends nothing under the budget).
    pacer.said(GLOBAL, 0.5)
    assert pacer.limit_of(GLOBAL) == 47  # the holder's share of the 50
    clock.advance(3.01)  # the holder died
    assert await standby.leased()
    began = clock.monotonic()
    for n in range(100):
        async with pacer.slot(Route(POST_ROUTE, f"c{n}")):
            await pacer.turn(Route(POST_ROUTE, f"c{n}"))
    # At the holder's 47 a second, not 1 or 7 (after the 429's hold, which the store's row
    # still holds: the database runs on its own clock).
    assert pacer.limit_of(GLOBAL) == 47
    assert clock.monotonic() - began < 100 / 47 + 0.5 + 0.1
