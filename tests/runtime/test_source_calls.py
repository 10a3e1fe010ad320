"""A source's tallies meet the same rules as an admin's: a final accounts for every ballot."""

from __future__ import annotations

import json

from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import PermanentSourceError
from bot.ingest.pipeline import Pipeline
from bot.ingest.poller import Poller, PollResult
from bot.ingest.sources.health import SourceHealth
from bot.ops.readiness import source_problem
from bot.store import Database, outbox
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock
from bot.testing.sources import FakeSource
from tests.helpers import tally

ADMIN = ChannelRef(Platform("console"), "local", "admins")


async def notices(db: Database, clock: FakeClock) -> list[str]:
    async with db.connect() as conn:
        due = await outbox.due(
            conn, Platform("console"), now=clock.now().replace(year=2100), limit=9
        )
    return [json.loads(d.payload)["text"] for d in due]


async def test_a_source_reporting_a_final_with_ballots_unopened_is_rejected_and_admins_told(
    sqlite_db: Database, clock: FakeClock
) -> None:
    source = FakeSource("nlrb-feed")
    pipeline = Pipeline(sqlite_db, clock, alert_channels=[ADMIN])
    poller = Poller("bessemer-2021", source, pipeline, SourceHealth(clock))
    source.set(tally(463, 1100, challenged=505))
    source.set(tally(463, 1100, challenged=505, state=TallyState.FINAL))
    async with source:
        assert await poller.poll() is PollResult.ACCEPTED
        assert await poller.poll() is PollResult.REJECTED
    async with sqlite_db.connect() as conn:
        (rejected,) = await tally_rows.rejected(conn, "bessemer-2021")
        last = await tally_rows.last(conn, "bessemer-2021")
    assert rejected.reason == "final_unaccounted"
    assert "1,147 of the 3,215 ballots received are not yet counted" in rejected.detail
    assert last is not None
    assert last.state is TallyState.COUNTING  # the count is not final
    (told,) = await notices(sqlite_db, clock)
    assert told.startswith("Rejected a tally for bessemer-2021 from nlrb-stream: 1,147 of the")


async def test_one_failed_poll_is_said_in_the_singular(
    sqlite_db: Database, clock: FakeClock
) -> None:
    source = FakeSource("nlrb-feed")
    health = SourceHealth(clock, max_failures=1)
    pipeline = Pipeline(sqlite_db, clock, alert_channels=[ADMIN])
    poller = Poller("bessemer-2021", source, pipeline, health)
    source.fail(PermanentSourceError("HTTP 404"))
    async with source:
        assert await poller.poll() is PollResult.FAILED
    (told,) = await notices(sqlite_db, clock)
    assert "is stale: 1 failed poll; last error: HTTP 404" in told
    assert source_problem("nlrb-feed", health) == (
        "source nlrb-feed is stale: 1 failed poll in a row; last error: HTTP 404"
    )
