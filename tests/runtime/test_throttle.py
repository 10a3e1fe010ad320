"""Every command gets an answer, and no one floods a channel: the limits in the command layer
(``bot.commands.throttle`` through ``Commands.handle``), on a fake clock."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from bot.charts.chart import ChartCache
from bot.charts.process import ChartProcess
from bot.commands.handler import Commands
from bot.commands.request import Reply, Request
from bot.commands.throttle import PER_USER, PUBLIC_PER_CHANNEL, Pass, Throttle
from bot.domain.subscription import ChannelRef, Platform
from bot.ingest.pipeline import Pipeline
from bot.ingest.sources.health import SourceHealth
from bot.store import Database
from bot.testing.clock import FakeClock

HALL = ChannelRef(Platform("slack"), "T1", "C-hall")
NEWS = ChannelRef(Platform("slack"), "T1", "C-news")


def ask(text: str, *, user: str = "U-bo", channel: ChannelRef = HALL) -> Request:
    return Request(channel, user, user, text, admin=user == "U-admin", home=True)


async def with_figures(
    db: Database, clock: FakeClock, charts: ChartCache | None = None
) -> Commands:
    commands = Commands(db, Pipeline(db, clock), clock, charts=charts)
    ok = await commands.handle(ask("update bessemer-2021 yes=463 no=1100", user="U-admin"))
    assert ok.ok, ok.text
    clock.advance(PER_USER.seconds)
    return commands


async def test_a_flood_of_status_is_answered_but_not_in_public(
    sqlite_db: Database, clock: FakeClock
) -> None:
    """One member sends 200 ``status`` in an instant: 200 answers, one of them public."""
    commands = await with_figures(sqlite_db, clock)
    replies = [await commands.handle(ask("status bessemer-2021")) for _ in range(200)]

    carried_out = [r for r in replies if r.ok]
    assert len(carried_out) == PER_USER.limit == 8
    assert all(r.message is not None for r in carried_out)
    assert [r.ephemeral for r in carried_out] == [False] + [True] * 7
    slowed = [r for r in replies if not r.ok]
    assert len(slowed) == 192
    assert {r.text for r in slowed} == {
        "Slow down: at most 8 commands in 20 seconds each; try again in 20 s."
    }
    assert all(r.ephemeral for r in slowed)

    clock.advance(12)  # the wait counts down
    wait = await commands.handle(ask("status bessemer-2021"))
    assert wait.text == "Slow down: at most 8 commands in 20 seconds each; try again in 8 s."
    clock.advance(8)
    again = await commands.handle(ask("status bessemer-2021"))
    assert (again.ok, again.ephemeral) == (True, False)


async def test_public_replies_are_shared_by_the_channel_and_spaced(
    sqlite_db: Database, clock: FakeClock
) -> None:
    commands = await with_figures(sqlite_db, clock)

    async def status(user: str, channel: ChannelRef = HALL) -> Reply:
        return await commands.handle(ask("status bessemer-2021", user=user, channel=channel))

    first, second = await status("U-ana"), await status("U-bo")
    elsewhere = await status("U-bo", NEWS)  # another channel has its own
    clock.advance(PUBLIC_PER_CHANNEL.seconds - 0.5)
    still = await status("U-cy")
    clock.advance(0.5)
    later = await status("U-cy")
    assert [r.ephemeral for r in (first, second, elsewhere, still, later)] == [
        False,
        True,
        False,
        True,
        False,
    ]
    assert second.message == first.message  # the same answer, only to the one who asked


async def test_a_chart_beyond_the_channels_limit_says_when_to_ask_again(
    sqlite_db: Database, clock: FakeClock, chart_process: ChartProcess
) -> None:
    commands = await with_figures(sqlite_db, clock, ChartCache(process=chart_process))
    shown = await commands.handle(ask("chart bessemer-2021", user="U-ana"))
    held = await commands.handle(ask("chart bessemer-2021", user="U-bo"))
    assert (shown.ephemeral, shown.attachment is not None) == (False, True)
    assert (held.ephemeral, held.attachment) == (True, None)
    assert held.text == (
        f"{shown.text} (The channel was shown one less than 5 s ago: ask again then.)"
    )


async def test_an_unexpected_failure_is_answered_and_logged(
    sqlite_db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    def broken_health(count_id: str) -> SourceHealth | None:
        raise RuntimeError("the health map is broken")

    pipeline = Pipeline(sqlite_db, clock)
    commands = Commands(sqlite_db, pipeline, clock, health=broken_health)
    with caplog.at_level(logging.ERROR, logger="bot.commands"):
        reply = await commands.handle(ask("status bessemer-2021"))
    assert not reply.ok
    assert reply.ephemeral
    assert reply.text.startswith("Error: tallybot could not do that (an internal error")
    [record] = caplog.records
    assert record.getMessage() == "command 'status bessemer-2021' from slack:U-bo (U-bo) failed"
    assert record.exc_info is not None
    assert "the health map is broken" in str(record.exc_info[1])


def test_people_and_channels_are_counted_apart_and_forgotten_beyond_a_bound() -> None:
    clock = FakeClock()
    throttle = Throttle(clock, max_keys=3)
    same_id_elsewhere = ChannelRef(Platform("discord"), "T1", "C-hall")
    for _ in range(PER_USER.limit):
        assert throttle.admit(HALL, "U-bo") == 0
    assert throttle.admit(HALL, "U-bo") > 0
    assert throttle.admit(NEWS, "U-bo") > 0  # a person, whatever the channel
    assert throttle.admit(same_id_elsewhere, "U-bo") == 0  # another platform: another person
    for user in ("U-1", "U-2", "U-3"):  # three more people: U-bo is forgotten
        throttle.admit(HALL, user)
    assert throttle.admit(HALL, "U-bo") == 0


def test_a_pass_counts_the_command_and_the_public_reply_when_it_comes_in() -> None:
    """For Discord, which must defer publicly or privately before the answer is known."""
    clock = FakeClock()
    throttle = Throttle(clock)
    assert throttle.check(HALL, "U-ana", public=True) == Pass(0, public=True)
    assert throttle.check(HALL, "U-bo", public=True) == Pass(0, public=False)  # slot taken
    assert throttle.check(NEWS, "U-bo", public=False) == Pass(0, public=False)
    assert throttle.check(NEWS, "U-bo", public=True) == Pass(0, public=True)
    for _ in range(PER_USER.limit - 3):
        throttle.check(NEWS, "U-bo", public=False)
    refused = throttle.check(HALL, "U-bo", public=True)
    assert (refused.wait, refused.public) == (PER_USER.seconds, False)
    clock.advance(PUBLIC_PER_CHANNEL.seconds)
    assert throttle.check(HALL, "U-cy", public=True).public  # the refused one took no slot


async def test_a_command_that_comes_with_its_pass_is_not_counted_again(
    sqlite_db: Database, clock: FakeClock
) -> None:
    commands = await with_figures(sqlite_db, clock)
    ticket = commands.throttle.check(HALL, "U-bo", public=True)
    reply = await commands.handle(replace(ask("status bessemer-2021"), passed=ticket))
    assert (reply.ok, reply.ephemeral) == (True, False)
    private = replace(ask("status bessemer-2021"), passed=Pass(0, public=False))
    assert (await commands.handle(private)).ephemeral
    refused = await commands.handle(replace(ask("status bessemer-2021"), passed=Pass(3.2, False)))
    assert refused.text == "Slow down: at most 8 commands in 20 seconds each; try again in 4 s."
