"""The local file source: re-read only on change, missing is transient."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.domain.model import Choice, Count, DecisionRule, RuleKind, TallyState
from bot.errors import ConfigError, PermanentSourceError, TransientSourceError
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.file import FileFormat, FileSource
from bot.ingest.sources.mapping import FieldMap, StateValues
from bot.testing.clock import FakeClock

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)
FIELDS = FieldMap({"yes": "votes.yes", "no": "votes.no"}, state="state")
STATES = StateValues({"recess": "paused"})


def write(path: Path, yes: int, no: int, state: str = "counting", *, mtime_ns: int) -> None:
    path.write_text(json.dumps({"votes": {"yes": yes, "no": no}, "state": state}))
    os.utime(path, ns=(mtime_ns, mtime_ns))


def source(path: Path, clock: FakeClock, **kw: object) -> FileSource:
    return FileSource(COUNT, path, clock=clock, fields=FIELDS, states=STATES, **kw)  # type: ignore[arg-type]


async def test_the_file_is_reread_only_when_mtime_or_size_changes(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    clock = FakeClock()
    write(path, 463, 1100, mtime_ns=1_000_000_000)
    async with source(path, clock, name="local") as s:
        first = await s.fetch()
        assert first is not None
        assert (dict(first.votes), first.source, first.observed_at) == (
            {"yes": 463, "no": 1100},
            "local",
            clock.now(),
        )
        assert await s.fetch() is None
        assert s.reads == 1

        write(path, 464, 1100, mtime_ns=1_000_000_000)  # same size, same mtime: not seen
        assert await s.fetch() is None
        assert s.reads == 1

        os.utime(path, ns=(2_000_000_000, 2_000_000_000))  # mtime moves: read again
        second = await s.fetch()
        assert second is not None
        assert second.votes["yes"] == 464
        assert s.reads == 2

        write(path, 1464, 1100, mtime_ns=2_000_000_000)  # same mtime, bigger: read again
        third = await s.fetch()
        assert third is not None
        assert third.votes["yes"] == 1464

        os.utime(path, ns=(3_000_000_000, 3_000_000_000))  # touched, same bytes
        assert await s.fetch() is None
        assert s.reads == 4


async def test_a_missing_file_is_transient_until_it_appears(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    async with source(path, FakeClock()) as s:
        with pytest.raises(TransientSourceError, match="no such file"):
            await s.fetch()
        write(path, 1, 2, "recess", mtime_ns=1_000_000_000)
        tally = await s.fetch()
    assert tally is not None
    assert tally.state is TallyState.PAUSED


async def test_a_broken_file_fails_on_every_fetch_until_fixed(tmp_path: Path) -> None:
    path = tmp_path / "feed.json"
    path.write_text('{"votes": {"yes": 1}}')
    async with source(path, FakeClock()) as s:
        for _ in range(2):
            with pytest.raises(PermanentSourceError, match=r"votes\.no: JSON path 'votes\.no'"):
                await s.fetch()
        write(path, 1, 2, mtime_ns=5_000_000_000)
        assert await s.fetch() is not None
    assert s.reads == 3


async def test_a_directory_or_an_oversize_file_is_permanent(tmp_path: Path) -> None:
    async with source(tmp_path, FakeClock(), format=FileFormat.JSON) as s:
        with pytest.raises(PermanentSourceError, match="is a directory"):
            await s.fetch()
    path = tmp_path / "feed.json"
    write(path, 1, 2, mtime_ns=1_000_000_000)
    async with source(path, FakeClock(), max_bytes=10) as s:
        with pytest.raises(PermanentSourceError, match="file larger than 10 bytes"):
            await s.fetch()


async def test_a_csv_file_in_pairs_layout(tmp_path: Path) -> None:
    path = tmp_path / "count.CSV"
    path.write_bytes(b'\xef\xbb\xbfYes,"1,100"\nNo,463\n')
    async with FileSource(COUNT, path, clock=FakeClock(), layout=CsvLayout.PAIRS) as s:
        tally = await s.fetch()
    assert s.format is FileFormat.CSV
    assert tally is not None
    assert dict(tally.votes) == {"yes": 1100, "no": 463}


def test_the_format_must_be_known(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot tell the format of"):
        FileSource(COUNT, tmp_path / "feed.txt", clock=FakeClock())
    assert (
        FileSource(COUNT, tmp_path / "feed.txt", clock=FakeClock(), format=FileFormat.CSV).format
        is FileFormat.CSV
    )
