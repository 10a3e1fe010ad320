"""Times people can read: values in messages until a surface shows them, the console's zone from
``[defaults] timezone``, and replays that keep the times they recorded."""

from __future__ import annotations

import doctest
import io
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import bot.domain.times
from adapters.console.adapter import ConsoleAdapter
from bot.commands.request import Reply
from bot.domain import format as fmt
from bot.domain.message import Message, Moment, Timed
from bot.domain.model import TallyState
from bot.domain.subscription import Platform
from bot.domain.times import clock_time, zone_named
from bot.errors import ConfigError
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.timeline import TimelineEntry
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import parse
from tests.helpers import T0, bessemer, stand_in_commands, tally

AT = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


def test_doctests() -> None:
    assert doctest.testmod(bot.domain.times).failed == 0


def test_clock_time_follows_each_zones_rules_at_each_instant() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    assert clock_time(AT, berlin) == "8 Apr 2021 20:00 CEST"
    assert clock_time(AT - timedelta(days=60), berlin) == "7 Feb 2021 19:00 CET"
    assert clock_time(AT, ZoneInfo("America/Sao_Paulo")) == "8 Apr 2021 15:00 -03"
    assert clock_time(AT, UTC) == "8 Apr 2021 18:00 UTC"


def test_zone_names_are_checked_with_a_clear_error() -> None:
    assert zone_named("Europe/Berlin") == ZoneInfo("Europe/Berlin")
    assert zone_named("europe/berlin") == ZoneInfo("Europe/Berlin")  # the case is forgiven
    with pytest.raises(ValueError, match=r"unknown time zone 'Europe/Berln' \(did you mean "):
        zone_named("Europe/Berln")
    for bad in ("", " UTC", "CEST+2", "../etc/passwd", "/etc/localtime"):
        with pytest.raises(ValueError, match="time zone"):
            zone_named(bad)


def test_defaults_timezone_in_the_config(tmp_path: Path) -> None:
    path = tmp_path / "tallybot.toml"
    assert parse({}, path).timezone is None  # the machine's own zone
    assert parse({"defaults": {"timezone": "America/Chicago"}}, path).timezone == ZoneInfo(
        "America/Chicago"
    )
    with pytest.raises(ConfigError) as typo:
        parse({"defaults": {"timezone": "America/Chicgo"}}, path)
    assert str(typo.value) == (
        f"{path}: defaults.timezone: unknown time zone 'America/Chicgo' (did you mean "
        "'America/Chicago'?); names look like 'Europe/Berlin'"
    )
    with pytest.raises(ConfigError, match=r"defaults.timezone: expected text, got 5"):
        parse({"defaults": {"timezone": 5}}, path)


def test_the_console_shows_times_in_the_configured_zone(tmp_path: Path) -> None:
    cfg = parse(
        {"defaults": {"timezone": "America/Chicago"}, "console": {"enabled": True}},
        tmp_path / "tallybot.toml",
    )
    commands = stand_in_commands()
    console = adapter_factories(cfg)[Platform("console")](commands)
    assert isinstance(console, ConsoleAdapter)
    out = io.StringIO()
    console.console.file = out
    text = Timed.of("#1 ", Moment(AT), " yes=1 no=2")
    console.show_reply(Reply(str(text), timed=text))
    assert out.getvalue() == "#1 8 Apr 2021 13:00 CDT yes=1 no=2\n"


def test_timed_text_round_trips_and_reads_the_outboxs_old_payloads() -> None:
    checked = Timed.of(Moment(AT, lead="Last checked ", relative=True), ".")
    message = replace(fmt.for_status(bessemer(), tally(84, 201, seq=3)), notes=(checked,))
    assert str(message.footer) == (
        "Unofficial results · source: nlrb-stream · as of 8 Apr 2021 18:00 UTC · update #3"
    )
    assert Message.from_json(message.to_json()) == message
    # A message queued in the outbox before times were values: its footer was a string.
    old = json.loads(message.to_json())
    old["footer"] = "Unofficial results · as of 8 Apr 2021 18:00 UTC"
    del old["notes"]
    read = Message.from_json(json.dumps(old))
    assert read.footer == Timed.of("Unofficial results · as of 8 Apr 2021 18:00 UTC")
    assert read.notes == ()


def test_timed_text_splits_into_lines_around_its_times() -> None:
    text = Timed.of("title:", "\n#1 ", Moment(AT), " a\nb", "\n#2 ", Moment(T0))
    assert [str(line) for line in text.lines()] == [
        "title:",
        "#1 8 Apr 2021 18:00 UTC a",
        "b",
        "#2 8 Apr 2021 18:00 UTC",
    ]
    assert [len(line.moments) for line in text.lines()] == [0, 1, 0, 1]


async def test_a_replay_keeps_the_times_it_recorded() -> None:
    class Clock:
        def now(self) -> datetime:
            return datetime(2026, 11, 30, 17, 50, tzinfo=UTC)

        def monotonic(self) -> float:
            return 0.0

    recorded = TimelineEntry(0, {"yes": 1, "no": 2}, observed_at=AT)
    unrecorded = TimelineEntry(0, {"yes": 1, "no": 2}, state=TallyState.PAUSED)
    for entry, expected in ((recorded, AT), (unrecorded, Clock().now())):
        source = ReplaySource.from_entries(bessemer(), [entry], clock=Clock())
        got = await source.fetch()
        assert got is not None
        assert got.observed_at == expected
