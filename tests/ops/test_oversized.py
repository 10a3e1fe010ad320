"""Oversized figures over the real ops server and a real feed: 4xx and failed polls, never a 500."""

from __future__ import annotations

from bot.ingest.poller import PollResult
from bot.store import tallies as tally_rows
from tests.ops.conftest import POLLED, Bot

HUGE = "1" * 4301


async def test_a_pushed_figure_of_4301_digits_is_a_422(bot: Bot) -> None:
    status, body = await bot.push(POLLED, {"votes": {"yes": HUGE, "no": 1}})
    assert status == 422
    assert "above the ceiling of 1,000,000,000,000" in body["error"]
    assert len(body["error"]) < 300


async def test_a_pushed_received_of_ten_to_the_twentieth_is_a_422(bot: Bot) -> None:
    status, body = await bot.push(POLLED, {"votes": {"yes": 1, "no": 1}, "received": 10**20})
    assert status == 422
    assert "received" in body["error"]
    async with bot.app.db.connect() as conn:
        assert await tally_rows.last(conn, POLLED) is None


async def test_a_feed_value_of_4301_digits_is_a_failed_poll_that_goes_stale(bot: Bot) -> None:
    poller = bot.app.pollers[POLLED]
    bot.feed.doc = {"yes": HUGE, "no": 201, "challenged": 505, "status": "counting"}
    assert await poller.poll() is PollResult.FAILED
    assert await poller.poll() is PollResult.FAILED  # stale_after_failures = 2
    status, body = await bot.get("/readyz")
    assert status == 503
    (problem,) = body["problems"]
    assert "is stale: 2 failed polls in a row" in problem
    assert "above the ceiling" in problem
    bot.feed.doc = {"yes": 84, "no": 201, "challenged": 505, "status": "counting"}
    assert await poller.poll() is PollResult.ACCEPTED
    assert (await bot.get("/readyz"))[0] == 200
