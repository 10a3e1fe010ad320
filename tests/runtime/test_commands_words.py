"""Issue 12 through the commands, as an admin types them: calls, hints that work, words, input."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.commands.handler import Commands
from bot.commands.request import Request
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import TransientSourceError
from bot.ingest.pipeline import Pipeline
from bot.ingest.sources.health import SourceHealth
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock

CHAN = ChannelRef(Platform("discord"), "g1", "c1")


def commands(db: Database, clock: FakeClock, **kw: object) -> Commands:
    return Commands(db, Pipeline(db, clock), clock, **kw)  # type: ignore[arg-type]


def admin(text: str) -> Request:
    return Request(CHAN, "42", "ana", text, admin=True, home=True)


def user(text: str) -> Request:
    return Request(CHAN, "7", "bo", text, home=True)


async def add_walden(db: Database) -> None:
    async with db.begin() as conn:
        await count_rows.upsert(
            conn,
            Count(
                "walden",
                "Walden Books unit",
                (Choice("yes", "Yes"), Choice("no", "No")),
                DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
                eligible=20,
                status=CountStatus.COUNTING,
            ),
        )


async def test_final_with_ballots_unopened_is_refused_naming_the_figure(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = commands(sqlite_db, clock)
    assert (await c.handle(admin("update bessemer-2021 yes=463 no=1100"))).ok
    refused = await c.handle(admin("final bessemer-2021"))
    assert not refused.ok
    assert "\n" not in refused.text
    assert refused.text.startswith("Rejected: ")
    assert "1,652 of the 3,215 ballots received" in refused.text
    assert "received=1563" in refused.text
    async with sqlite_db.connect() as conn:
        last = await tally_rows.last(conn, "bessemer-2021")
        (rejected,) = await tally_rows.rejected(conn, "bessemer-2021")
    assert last is not None
    assert last.seq == 1
    assert rejected.reason == "final_unaccounted"
    # The hint works when followed.
    followed = await c.handle(admin("final bessemer-2021 received=1563"))
    assert followed.ok, followed.text
    assert followed.message is not None
    assert followed.message.headline == "Final tally: No union wins, 1,100 to 463"


async def test_the_walden_reversal_after_the_final(sqlite_db: Database, clock: FakeClock) -> None:
    await add_walden(sqlite_db)
    c = commands(sqlite_db, clock)
    for text in (
        "update walden yes=8 no=8 challenged=1 received=17",
        "update walden no=9 challenged=0",
        "final walden",
    ):
        reply = await c.handle(admin(text))
        assert reply.ok, reply.text
    corrected = await c.handle(admin("correct walden yes=9 no=8"))
    assert corrected.ok, corrected.text
    assert corrected.message is not None
    assert corrected.message.headline == (
        "Corrected final tally: the earlier call for No is withdrawn; Yes wins, 9 to 8"
    )


async def test_the_over_received_hint_works_when_followed(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = commands(sqlite_db, clock)
    over = await c.handle(admin("update bessemer-2021 yes=2000 no=1300"))
    assert not over.ok
    assert over.text == (
        "Rejected: 3,300 ballots counted or challenged but only 3,215 received "
        "(if more ballots came in, say so: update bessemer-2021 yes=2000 no=1300 received=3300)"
    )
    assert "correct" not in over.text  # a correction would be rejected the same way
    followed = await c.handle(admin("update bessemer-2021 yes=2000 no=1300 received=3300"))
    assert followed.ok, followed.text


async def test_the_decrease_hint_works_when_followed(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    assert (await c.handle(admin("update bessemer-2021 yes=463 no=1100"))).ok
    lower = await c.handle(admin("update bessemer-2021 no=1,090"))
    assert lower.text.endswith("(to fix earlier figures: correct bessemer-2021 no=1090)")
    assert (await c.handle(admin("correct bessemer-2021 no=1090"))).ok


async def test_received_above_eligible_is_refused(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    reply = await c.handle(admin("update bessemer-2021 yes=1 no=2 received=6000"))
    assert not reply.ok
    assert reply.text == (
        "Rejected: 6,000 received but only 5,876 eligible (eligible is set in the config)"
    )


async def test_the_history_and_refusals_read_as_english(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = commands(sqlite_db, clock)
    await c.handle(admin("update bessemer-2021 yes=463 no=1100"))
    history = await c.handle(user("history bessemer-2021"))
    assert history.text.startswith("Amazon BHM1 union election, Bessemer AL — the last update:\n")
    await c.handle(admin("update bessemer-2021 yes=464"))
    history = await c.handle(user("history bessemer-2021"))
    assert "— the last 2 updates:\n" in history.text
    refused = await c.handle(user("deliveries"))
    assert refused.text.startswith("Error: only admins can list failed deliveries;")
    refused = await c.handle(user("final bessemer-2021"))
    assert refused.text.startswith("Error: only admins can declare a count final;")


async def test_the_status_line_keeps_the_case_of_what_it_quotes(
    sqlite_db: Database, clock: FakeClock
) -> None:
    health = SourceHealth(clock, max_failures=1)
    health.record_failure(TransientSourceError("HTTP 503 from https://Feeds.Example.org/NLRB"))
    c = commands(sqlite_db, clock, health=lambda count_id: health)
    await c.handle(admin("update bessemer-2021 yes=463 no=1100"))
    status = await c.handle(user("status bessemer-2021"))
    assert status.message is not None
    line = str(status.message.notes[-1])
    assert line.startswith("Last checked 8 Apr 2021 12:00 UTC; source stale (HTTP 503 from ")
    assert "https://Feeds.Example.org/NLRB" in line


@pytest.mark.parametrize(
    ("figure", "words"),
    [
        ("yes=٤٨٠", "yes=٤٨٠: not a whole number"),  # Arabic-Indic digits
        ("yes=４８０", "not a whole number"),  # fullwidth digits
        ("yes=1" + "0" * 12 + "1", "yes is too large: figures are at most 1,000,000,000,000"),
        ("received=" + "1" * 4301, "received is too large"),
        ("no=" + "9" * 30, "no is too large"),
    ],
)
async def test_figures_are_ascii_digits_under_the_ceiling(
    sqlite_db: Database, clock: FakeClock, figure: str, words: str
) -> None:
    reply = await commands(sqlite_db, clock).handle(admin(f"update bessemer-2021 {figure}"))
    assert not reply.ok
    assert words in reply.text
    assert "\n" not in reply.text
    assert len(reply.text) < 200  # a 4,301-digit figure is not echoed back whole


async def test_the_ceiling_itself_is_a_figure(sqlite_db: Database, clock: FakeClock) -> None:
    async with sqlite_db.begin() as conn:
        huge = Count(
            "census",
            "Census",
            (Choice("yes", "Yes"), Choice("no", "No")),
            DecisionRule(RuleKind.MAJORITY),
        )
        await count_rows.upsert(conn, replace(huge, status=CountStatus.COUNTING))
    reply = await commands(sqlite_db, clock).handle(
        admin("update census yes=1,000,000,000,000 no=0 received=1000000000000")
    )
    assert reply.ok, reply.text
