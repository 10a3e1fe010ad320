"""Replaying a recorded count against a FakeClock, and recording one."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path

import pytest

from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.errors import ConfigError, PermanentSourceError, StoreError
from bot.ingest.recording import Recorder
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.timeline import TimelineEntry
from bot.testing.clock import FakeClock

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)

BESSEMER = [
    {"at": 0, "votes": {"yes": 0, "no": 0}, "received": 3215, "note": "count opens"},
    {"at": 60, "votes": {"yes": 120, "no": 310}, "void": 3, "challenged": 40, "received": 3215},
    {"at": 120, "votes": {"yes": 463, "no": 1100}, "void": 10, "challenged": 505},
    {"at": 300, "votes": {"yes": 738, "no": 1798}, "state": "final", "note": "NLRB tally"},
]


def timeline(tmp_path: Path, lines: list[dict[str, object]]) -> Path:
    path = tmp_path / "bessemer.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    return path


async def test_replay_at_speed_60_follows_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    source = ReplaySource(COUNT, timeline(tmp_path, BESSEMER), clock=clock, speed=60)
    async with source:
        assert source.next_due() == 0.0  # not started: fetch now
        first = await source.fetch()
        assert first == Tally(
            "bessemer-2021", {"yes": 0, "no": 0}, clock.now(), "replay", received=3215
        )
        assert source.last_note == "count opens"
        assert await source.fetch() is None
        assert source.next_due() == pytest.approx(1.0)

        clock.advance(0.5)
        assert await source.fetch() is None
        assert source.next_due() == pytest.approx(0.5)

        clock.advance(0.5)
        second = await source.fetch()
        assert second is not None
        assert (dict(second.votes), second.void, second.challenged, second.observed_at) == (
            {"yes": 120, "no": 310},
            3,
            40,
            clock.now(),
        )
        assert not source.done

        clock.advance(10)  # 11 s = 660 recorded seconds: skip to the newest due entry
        last = await source.fetch()
        assert last is not None
        assert (dict(last.votes), last.state, last.received) == (
            {"yes": 738, "no": 1798},
            TallyState.FINAL,
            None,
        )
        assert source.done
        assert source.next_due() is None
        assert await source.fetch() is None


async def test_nothing_is_due_before_the_first_entry(tmp_path: Path) -> None:
    clock = FakeClock()
    lines = [{"at": 30, "votes": {"yes": 1, "no": 2}}]
    async with ReplaySource(COUNT, timeline(tmp_path, lines), clock=clock, speed=2) as source:
        assert await source.fetch() is None
        assert source.next_due() == pytest.approx(15.0)
        clock.advance(15)
        assert await source.fetch() is not None
        assert source.done


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ({"at": 0, "votes": {"yes": 1}}, "votes.no: missing"),
        ({"at": 0, "votes": {"yes": 1, "no": 2, "maybe": 3}}, "votes: unknown choice 'maybe'"),
        ({"at": 0, "votes": {"yes": 1, "no": -2}}, "votes.no (timeline): -2 is negative"),
        ({"at": 0, "votes": {"yes": 1, "no": "2"}}, "votes.no: '2' is not a number"),
        ({"at": 0, "votes": {"yes": 1, "no": 2}, "state": "over"}, "state: 'over' is not one of"),
        ({"at": 0, "votes": {"yes": 1, "no": 2}, "vote": {}}, "unknown key 'vote'"),
        ({"at": -1, "votes": {"yes": 1, "no": 2}}, "at: -1 must be a finite number >= 0"),
        ({"at": "soon", "votes": {"yes": 1, "no": 2}}, "at: 'soon' is not a number"),
        ({"at": 0, "votes": {"yes": 1, "no": 2}, "received": 2.5}, "received (timeline): 2.5"),
        ({"at": 0, "votes": {"yes": 1, "no": 2}, "observed_at": "noon"}, "observed_at: 'noon'"),
    ],
)
async def test_a_bad_line_is_named_by_number(
    tmp_path: Path, line: dict[str, object], problem: str
) -> None:
    good = {"at": 0, "votes": {"yes": 0, "no": 0}}
    path = timeline(tmp_path, [good, line])
    async with ReplaySource(COUNT, path, clock=FakeClock()) as source:
        with pytest.raises(PermanentSourceError) as info:
            await source.fetch()
    assert f"{path}: line 2: {problem}" in str(info.value)


async def test_times_going_backwards_or_a_missing_file_are_permanent(tmp_path: Path) -> None:
    lines = [{"at": 10, "votes": {"yes": 0, "no": 0}}, {"at": 5, "votes": {"yes": 1, "no": 0}}]
    async with ReplaySource(COUNT, timeline(tmp_path, lines), clock=FakeClock()) as source:
        with pytest.raises(PermanentSourceError, match="line 2: at 5 is earlier"):
            await source.fetch()
    async with ReplaySource(COUNT, tmp_path / "nope.jsonl", clock=FakeClock()) as source:
        with pytest.raises(PermanentSourceError, match="no such recording"):
            await source.fetch()
    (tmp_path / "empty.jsonl").write_text("\n")
    async with ReplaySource(COUNT, tmp_path / "empty.jsonl", clock=FakeClock()) as source:
        with pytest.raises(PermanentSourceError, match="no entries"):
            await source.fetch()


def test_speed_must_be_positive(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="speed must be > 0"):
        ReplaySource(COUNT, tmp_path / "x.jsonl", clock=FakeClock(), speed=0)


def seen(clock: FakeClock, after: float, yes: int, no: int, **kw: object) -> Tally:
    when = clock.now() + timedelta(seconds=after)
    return Tally("bessemer-2021", {"yes": yes, "no": no}, when, "nlrb-feed", **kw)  # type: ignore[arg-type]


async def test_record_then_replay_gives_the_same_tallies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fsyncs: list[int] = []
    real_fsync = os.fsync

    def counting_fsync(fd: int) -> None:
        fsyncs.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", counting_fsync)
    clock = FakeClock()
    recorded = [
        seen(clock, 0, 0, 0, received=3215),
        seen(clock, 60, 120, 310, void=3, challenged=40, received=3215),
        seen(clock, 150.5, 463, 1100, void=10, challenged=505, state=TallyState.PAUSED),
        seen(clock, 400, 738, 1798, void=76, challenged=505, state=TallyState.FINAL),
        seen(clock, 460, 738, 1797, state=TallyState.FINAL, correction=True),
    ]
    path = tmp_path / "rec" / "bessemer.jsonl"
    path.parent.mkdir()
    async with Recorder(path) as recorder:
        ats = [
            await recorder.record(t, note="pause" if i == 2 else None)
            for i, t in enumerate(recorded)
        ]
    assert ats == [0.0, 60.0, 150.5, 400.0, 460.0]
    assert len(fsyncs) == len(recorded)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["at"] for line in lines] == ats
    assert lines[2]["note"] == "pause"

    replay_clock = FakeClock()
    replayed: list[Tally] = []
    async with ReplaySource(COUNT, path, clock=replay_clock, speed=60) as source:
        while not source.done:
            tally = await source.fetch()
            if tally is not None:
                replayed.append(tally)
            wait = source.next_due()
            if wait is not None:
                replay_clock.advance(wait)
    assert [t.figures() for t in replayed] == [t.figures() for t in recorded]
    assert [t.correction for t in replayed] == [t.correction for t in recorded]
    assert all(t.source == "replay" and t.count_id == "bessemer-2021" for t in replayed)
    assert replay_clock.monotonic() - FakeClock().monotonic() == pytest.approx(460 / 60)


async def test_a_restarted_recorder_continues_the_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    path = tmp_path / "bessemer.jsonl"
    async with Recorder(path) as recorder:
        await recorder.record(seen(clock, 0, 0, 0))
        await recorder.record(seen(clock, 30, 5, 5))
    async with Recorder(path) as recorder:
        assert await recorder.record(seen(clock, 90, 9, 9)) == 90.0
        assert await recorder.record(seen(clock, 80, 9, 10)) == 90.0  # never goes back
        with pytest.raises(ValueError, match="recording count 'bessemer-2021'"):
            await recorder.record(Tally("other", {"yes": 1, "no": 1}, clock.now(), "x"))
    ats = [json.loads(line)["at"] for line in path.read_text().splitlines()]
    assert ats == [0.0, 30.0, 90.0, 90.0]


async def test_recording_into_a_file_that_is_not_a_timeline_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("shopping list\n")
    with pytest.raises(StoreError, match="line 1 is not a timeline entry"):
        async with Recorder(path):
            pass


async def test_replay_from_entries_in_memory() -> None:
    clock = FakeClock()
    entries = [
        TimelineEntry(at=0, votes={"yes": 1, "no": 1}),
        TimelineEntry(at=10, votes={"yes": 2, "no": 1}, note="second"),
    ]
    async with ReplaySource.from_entries(COUNT, entries, clock=clock, speed=10) as source:
        assert await source.fetch() is not None
        clock.advance(1)
        tally = await source.fetch()
    assert tally is not None
    assert tally.votes["yes"] == 2
    assert source.last_note == "second"
    with pytest.raises(ConfigError, match="in order"):
        ReplaySource.from_entries(COUNT, entries[::-1], clock=clock)
