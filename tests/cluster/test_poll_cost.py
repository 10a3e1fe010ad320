"""What a poll of an unchanged feed costs: its HTTP request, and nothing in the store (the
feed says 304; the count's poll lease is renewed in batches, not per poll)."""

from __future__ import annotations

from bot.cluster import Instance
from bot.cluster.polls import PollLeases
from bot.ingest.pipeline import Pipeline
from bot.ingest.poller import Poller, PollResult
from bot.ingest.sources.health import SourceHealth
from bot.store import Database
from bot.store import counts as count_rows
from bot.testing.clock import FakeClock
from tests.helpers import statements
from tests.test_sources_http import COUNT, Server, feed, json_source, server

__all__ = ["server"]


async def test_a_poll_of_an_unchanged_feed_sends_nothing_to_the_store(
    db: Database, server: Server
) -> None:
    clock = FakeClock()
    async with db.begin() as conn:
        await count_rows.upsert(conn, COUNT)
    server.feed.body = feed(yes=463, no=1100)
    server.feed.etag = '"v1"'
    leases = PollLeases(db, clock, Instance("one"))
    async with json_source(server.url, clock) as source:
        poller = Poller(COUNT.id, source, Pipeline(db, clock), SourceHealth(clock))
        poll = leases.guard(COUNT.id, 15, poller.poll)
        assert await poll() is PollResult.ACCEPTED  # the lease taken, the first tally stored
        with statements() as sent:
            for _ in range(3):
                clock.advance(1)  # turns within the lease's first third: nothing due
                assert await poll() is PollResult.NOT_MODIFIED
    assert sent == []
    assert [r.get("If-None-Match") for r in server.feed.requests] == [None, '"v1"', '"v1"', '"v1"']
    await leases.release_all()
