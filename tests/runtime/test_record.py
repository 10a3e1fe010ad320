"""``tallybot record`` writes each accepted tally once; the timeline replays to the same tallies."""

from __future__ import annotations

import json
from pathlib import Path

from bot.ingest.recording import record_count
from bot.ingest.sources.timeline import parse_timeline
from bot.settings.loader import parse
from bot.testing.clock import FakeClock
from tests.helpers import bessemer


async def test_record_then_replay(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    readings = iter(
        [
            {"yes": 84, "no": 201, "state": "counting"},
            {"yes": 84, "no": 201, "state": "counting"},  # unchanged: not recorded
            {"yes": 84, "no": 190, "state": "counting"},  # went down: rejected, not recorded
            {"yes": 463, "no": 1100, "state": "paused"},
        ]
    )
    clock = FakeClock()

    def write_next() -> None:
        doc = next(readings, None)
        if doc is not None:
            feed.write_text(json.dumps(doc))

    async def tick(seconds: float) -> None:
        clock.advance(seconds)
        write_next()

    write_next()
    cfg = parse(
        {
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": "Bessemer",
                    "tie_holder": "no",
                    "received": 3215,
                    "choices": [{"id": "yes"}, {"id": "no"}],
                    "source": {"kind": "file", "path": "feed.json", "fields": {"state": "state"}},
                }
            ]
        },
        tmp_path / "c.toml",
    )
    out = tmp_path / "timeline.jsonl"
    written = await record_count(cfg, "bessemer-2021", out, clock=clock, sleep=tick, polls=4)
    assert written == 2
    entries = parse_timeline(out.read_text(), bessemer(), str(out))
    assert [dict(e.votes) for e in entries] == [{"yes": 84, "no": 201}, {"yes": 463, "no": 1100}]
    assert [e.at for e in entries] == [0.0, 45.0]  # three 15 s intervals later


async def test_record_shows_each_tally_and_stops_by_itself_at_the_final(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    readings = iter(
        [
            {"yes": 84, "no": 201, "state": "counting"},
            {"yes": 738, "no": 1798, "state": "final"},
        ]
    )
    clock = FakeClock()

    async def tick(seconds: float) -> None:
        clock.advance(seconds)
        doc = next(readings, None)
        assert doc is not None, "polled again after the final"
        feed.write_text(json.dumps(doc))

    await tick(0)
    cfg = parse(
        {
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": "Bessemer",
                    "tie_holder": "no",
                    "choices": [{"id": "yes"}, {"id": "no"}],
                    "source": {"kind": "file", "path": "feed.json", "fields": {"state": "state"}},
                }
            ]
        },
        tmp_path / "c.toml",
    )
    said: list[str] = []
    out = tmp_path / "timeline.jsonl"
    written = await record_count(
        cfg, "bessemer-2021", out, clock=clock, sleep=tick, say=said.append
    )
    assert written == 2
    assert said == [
        "recorded #1: yes=84 no=201 void=0 challenged=0 state=counting",
        "recorded #2: yes=738 no=1798 void=0 challenged=0 state=final",
        "bessemer-2021 is final: recording stopped",
    ]
