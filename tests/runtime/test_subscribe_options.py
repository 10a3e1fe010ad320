"""``subscribe`` with filters and options: the grammar, a change in place that says what
changed, ``list`` in the grammar that recreates it, and options a platform does not have."""

from __future__ import annotations

import pytest

from bot.commands.hearing import parse_wants
from bot.commands.request import Mentions, Request
from bot.domain.subscription import Close, Extra, Hear, Wants
from bot.errors import CommandError
from bot.store import Database
from bot.store import audit as audit_rows
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.runtime.test_commands import CHAN, commands


class Roles(Mentions):
    """A server with one role this person may have pinged: "organisers" (id 555)."""

    async def resolve(self, typed: str) -> str:
        if typed.lower() in {"@organisers", "<@&555>", "@555"}:
            return "555"
        raise CommandError(f"no role {typed} you may mention here")


EVERY = frozenset(Extra)


def asking(text: str, supports: frozenset[Extra] = EVERY) -> Request:
    return Request(CHAN, "7", "bo", text, supports=supports, mentions=Roles(), home=True)


@pytest.mark.parametrize(
    ("words", "wants"),
    [
        ("", Wants()),
        ("live", Wants(live=True)),
        ("ALL", Wants(frozenset({Hear.ALL}))),
        ("final", Wants(frozenset({Hear.FINAL}))),
        ("calls leads", Wants(frozenset({Hear.CALLS, Hear.LEADS}))),
        ("remind", Wants(frozenset({Hear.REMIND}))),
        ("calls Remind", Wants(frozenset({Hear.CALLS, Hear.REMIND}))),
        ("close=1,000", Wants(close=Close(votes=1000))),
        ("live close=2.5% pin", Wants(live=True, close=Close(tenths=25), pin=True)),
        (
            "final mention=@Organisers thread",
            Wants(frozenset({Hear.FINAL}), mention="@Organisers", thread=True),
        ),
    ],
)
def test_the_grammar(words: str, wants: Wants) -> None:
    assert parse_wants(words.split()) == wants


@pytest.mark.parametrize(
    ("words", "error"),
    [
        ("loud", "unknown option 'loud'"),
        ("close=lots", "close=lots: write close=50 (votes) or close=2% (a share)"),
        ("close=0%", "close=0%: a share above 0% and at most 100%"),
        ("close=100.5%", "close=100.5%: a share above 0% and at most 100%"),
        ("close=2.25%", "close=2.25%: write close=50"),
        ("mention=", "mention= needs a role"),
        ("thread=yes", "unknown option 'thread=yes'"),
    ],
)
def test_bad_options_say_what_to_write(words: str, error: str) -> None:
    with pytest.raises(CommandError, match=error.replace("(", r"\(").replace(")", r"\)")):
        parse_wants(words.split())


def test_grammar_round_trips() -> None:
    for words in (
        "events",
        "live",
        "all",
        "final",
        "live calls leads close=2.5% thread pin",
        "remind",
        "events remind",
        "events close=50",
    ):
        wants = parse_wants(words.split())
        assert wants.grammar() == words
        assert parse_wants(wants.grammar().split()) == wants


async def test_subscribe_changes_in_place_and_list_recreates(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = commands(sqlite_db, clock)
    first = await c.handle(asking("subscribe bessemer-2021 calls close=50 mention=@organisers"))
    assert first.text == (
        "Subscribed this channel to bessemer-2021: calls (a side clinching, a call withdrawn, the "
        "final) and every update while the margin is at most 50 votes; pinging the role 555 on "
        "calls and the final."
    )
    assert not first.ephemeral
    listed = await c.handle(asking("list"))
    assert "— subscribed (calls close=50 mention=@555)" in listed.text
    same = await c.handle(asking("subscribe bessemer-2021 calls close=50 mention=@555"))
    assert same.text.startswith("This channel is already subscribed to bessemer-2021: calls")
    changed = await c.handle(asking("subscribe bessemer-2021 live final close=2% thread"))
    assert changed.text == (
        "Updated the subscription of this channel to bessemer-2021: hears live final (was "
        "calls); close 2% (was 50); mention off (was @555); thread on (was off)."
    )
    async with sqlite_db.connect() as conn:
        (sub,) = await sub_rows.for_channel(conn, CHAN)
        entries = await audit_rows.recent(conn)
    assert sub.wants == Wants(
        frozenset({Hear.FINAL}), live=True, close=Close(tenths=20), thread=True
    )
    assert [(e.action, e.new, e.detail) for e in entries] == [
        (
            "subscribe",
            "calls close=50 mention=@555",
            "pings @555 on calls and the final in discord:g1/c1",
        )
    ]


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "subscribe bessemer-2021 thread",
            "Error: thread is not supported on Discord; leave it out",
        ),
        (
            "subscribe bessemer-2021 live pin",
            "Error: pin is not supported on Discord; leave it out",
        ),
        (
            "subscribe bessemer-2021 mention=@organisers",
            "Error: mention is not supported on Discord",
        ),
    ],
)
async def test_options_a_platform_lacks_are_refused(
    sqlite_db: Database, clock: FakeClock, text: str, error: str
) -> None:
    reply = await commands(sqlite_db, clock).handle(asking(text, supports=frozenset()))
    assert not reply.ok
    assert reply.text.startswith(error)
    async with sqlite_db.connect() as conn:
        assert await sub_rows.for_channel(conn, CHAN) == []


async def test_pin_needs_live_and_mention_needs_the_right(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = commands(sqlite_db, clock)
    pin = await c.handle(asking("subscribe bessemer-2021 pin"))
    assert pin.text == "Error: pin pins the live scoreboard: add live (subscribe <count> live pin)"
    role = await c.handle(asking("subscribe bessemer-2021 mention=@everyone"))
    assert role.text == "Error: no role @everyone you may mention here"
    async with sqlite_db.connect() as conn:
        assert await sub_rows.for_channel(conn, CHAN) == []
