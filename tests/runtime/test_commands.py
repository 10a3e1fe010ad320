"""Commands as a user types them: clear one-line errors, admin checks, audit."""

from __future__ import annotations

import pytest

from bot.charts.chart import ChartCache
from bot.charts.process import ChartProcess
from bot.commands.handler import Commands
from bot.commands.request import Request
from bot.commands.throttle import Throttle
from bot.delivery.pacing import Window
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.domain.subscription import ChannelRef, Mode, Platform
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.testing.clock import FakeClock
from tests.charts import Counted

CHAN = ChannelRef(Platform("discord"), "g1", "c1")


def roomy(clock: FakeClock) -> Throttle:
    """No limit these tests reach (they type faster than anyone: time stands still)."""
    return Throttle(clock, per_user=Window(1000, 1.0), public_per_channel=Window(1000, 1.0))


def commands(db: Database, clock: FakeClock) -> Commands:
    return Commands(db, Pipeline(db, clock), clock, throttle=roomy(clock))


def admin(text: str) -> Request:
    """A request the platform's admin policy found to come from an admin."""
    return Request(CHAN, "42", "ana", text, admin=True, home=True)


def user(text: str, **kw: object) -> Request:
    return Request(CHAN, "7", "bo", text, **{"home": True, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("subscribe bessemer", "unknown count 'bessemer'; did you mean bessemer-2021?"),
        ("subscribe bessemer-2021 loud", "unknown option 'loud'"),
        ("frobnicate", "unknown command 'frobnicate'"),
        (
            "update bessemer-2021 maybe=3",
            "unknown choice 'maybe' for bessemer-2021; use one of: yes, no",
        ),
        ("update bessemer-2021 no=lots", "no=lots: not a whole number"),
        ("update bessemer-2021 no=-5", "no=-5: figures cannot be negative"),
        ("update bessemer-2021", "no figures given; usage: update <count>"),
        ("update bessemer-2021 no", "'no' is not a figure: write name=number"),
        ("history", "which count? usage: history <count>"),
        ("chart", "which count? usage: chart <count>"),
        ("chart bessemer-2021 now", "chart takes only the count; usage: chart <count>"),
        ("unsubscribe bessemer-2021", "this channel is not subscribed to bessemer-2021"),
    ],
)
async def test_bad_input_gets_a_clear_error(
    sqlite_db: Database, clock: FakeClock, text: str, words: str
) -> None:
    reply = await commands(sqlite_db, clock).handle(admin(text))
    assert not reply.ok
    assert words in reply.text
    assert "\n" not in reply.text


async def test_update_then_decrease_needs_correct(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    ok = await c.handle(admin("update bessemer-2021 yes=463 no=1,100 challenged=505 received=3215"))
    assert ok.ok
    assert ok.text.startswith("Accepted update #1 for bessemer-2021")
    lower = await c.handle(admin("update bessemer-2021 no=1090"))
    assert not lower.ok
    assert lower.text == (
        "Rejected: figures went down (no 1,100 -> 1,090); send them as a correction if they are "
        "right (to fix earlier figures: correct bessemer-2021 no=1090)"
    )
    fixed = await c.handle(admin("correct bessemer-2021 no=1090"))
    assert fixed.ok
    assert fixed.message is not None
    assert fixed.message.headline.startswith("Correction:")
    same = await c.handle(admin("update bessemer-2021 no=1090"))
    assert same.text == "No change: bessemer-2021 already shows those figures."
    async with sqlite_db.connect() as conn:
        last = await tally_rows.last(conn, "bessemer-2021")
    assert last is not None
    assert dict(last.votes) == {"yes": 463, "no": 1090}
    assert (last.challenged, last.received, last.source) == (505, 3215, "admin ana")


async def test_non_admin_is_refused_and_audited(sqlite_db: Database, clock: FakeClock) -> None:
    reply = await commands(sqlite_db, clock).handle(user("final bessemer-2021"))
    assert not reply.ok
    assert "only admins can declare a count final" in reply.text
    async with sqlite_db.connect() as conn:
        entries = await audit_rows.recent(conn)
        assert await tally_rows.last(conn, "bessemer-2021") is None
    assert [(e.action, e.allowed, e.detail) for e in entries] == [
        ("final", False, "refused: not an admin")
    ]


async def test_the_core_asks_only_the_requests_verdict(
    sqlite_db: Database, clock: FakeClock
) -> None:
    """Who is an admin is each platform's policy (tests/adapters/test_admin_policies.py): the
    core runs an admin command only when the request says admin, and audits a refusal with the
    policy's reason and the platform's word for the place."""
    c = commands(sqlite_db, clock)
    allowed = await c.handle(user("update bessemer-2021 no=5", admin=True))
    assert allowed.ok, allowed.text
    refused = await c.handle(
        user(
            "pause bessemer-2021",
            refusal="refused: Manage Server counts only in listed servers",
            place="server",
        )
    )
    assert refused.text == "Error: only admins can pause a count; ask an admin of this server"
    async with sqlite_db.connect() as conn:
        (entry, _) = await audit_rows.recent(conn)
    assert (entry.action, entry.allowed, entry.detail) == (
        "pause",
        False,
        "refused: Manage Server counts only in listed servers",
    )


async def test_subscribe_list_status_history(sqlite_db: Database, clock: FakeClock) -> None:
    c = commands(sqlite_db, clock)
    sub = await c.handle(user("subscribe bessemer-2021 live"))
    assert (
        sub.text
        == "Subscribed this channel to bessemer-2021: a live scoreboard plus significant events."
    )
    again = await c.handle(user("subscribe bessemer-2021"))
    assert again.text.startswith("Updated the subscription")
    async with sqlite_db.connect() as conn:
        (s,) = await sub_rows.for_channel(conn, CHAN)
    assert s.mode is Mode.EVENTS
    listed = await c.handle(user("list"))
    assert (
        "bessemer-2021: Amazon BHM1 union election, Bessemer AL [counting] — subscribed (events)"
        in listed.text
    )
    assert (await c.handle(user("status"))).text.endswith("no figures yet.")
    await c.handle(admin("update bessemer-2021 yes=463 no=1100"))
    status = await c.handle(user("status"))
    assert status.message is not None
    assert status.message.headline == "No union leads by 637"
    history = await c.handle(user("history bessemer-2021"))
    assert history.text.endswith(  # figures as every message words them (issue 24)
        "\n#1 · 8 Apr 2021 12:00 UTC · Yes (RWDSU) 463, No union 1,100 · "
        "First results: No union leads by 637 (source: admin ana)"
    )


async def test_chart_replies_with_a_png(
    sqlite_db: Database,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    chart_process: ChartProcess,
) -> None:
    renders = Counted(chart_process)
    c = Commands(
        sqlite_db,
        Pipeline(sqlite_db, clock),
        clock,
        charts=ChartCache(process=renders),
        throttle=roomy(clock),
    )
    empty = await c.handle(user("chart bessemer-2021"))
    assert (empty.text, empty.attachment) == ("bessemer-2021: no figures yet.", None)
    await c.handle(admin("update bessemer-2021 yes=463 no=1100 challenged=505 received=3215"))
    await c.handle(admin("pause bessemer-2021"))
    reply = await c.handle(user("chart bessemer-2021"))
    assert reply.ok
    assert not reply.ephemeral  # the channel sees it, like status
    assert reply.text == "Chart of Amazon BHM1 union election, Bessemer AL, as of update #2."
    assert reply.attachment is not None
    assert reply.attachment.filename == "bessemer-2021-2.png"
    assert reply.attachment.data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(reply.attachment.data) < 200_000
    assert reply.attachment.description.startswith(
        "Chart of Amazon BHM1 union election, Bessemer AL: votes for Yes (RWDSU), No union "
        "against ballots counted, updates #1 to #2. "
        "Unofficial, count paused: No union leads by 637."
    )
    again = await c.handle(user("CHART Bessemer-2021"))
    assert again.attachment == reply.attachment
    assert renders.seqs == [2]  # the second came from the cache
    await c.handle(admin("update bessemer-2021 no=1200"))
    newer = await c.handle(user("chart bessemer-2021"))
    assert newer.attachment is not None
    assert newer.attachment.filename == "bessemer-2021-3.png"
    assert renders.seqs == [2, 3]


async def test_status_without_a_count_sums_up_every_count(
    sqlite_db: Database, clock: FakeClock
) -> None:
    board = Count(
        "board-2026",
        "Board election",
        (Choice("ana", "Ana Ruiz"), Choice("ben", "Ben Okafor")),
        DecisionRule(RuleKind.PLURALITY),
        status=CountStatus.COUNTING,
    )
    async with sqlite_db.begin() as conn:
        await count_rows.upsert(conn, board)
    c = commands(sqlite_db, clock)
    await c.handle(admin("update bessemer-2021 yes=463 no=1100"))
    reply = await c.handle(user("status"))  # no subscription here, two counts
    assert reply.ok
    assert reply.text.split("\n") == [
        "bessemer-2021 [counting]: No union leads by 637",
        "board-2026 [counting]: no figures yet",
        "For one count's figures: usage: status [count]",
    ]
