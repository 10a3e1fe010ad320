"""The in-memory FakeSource, the manual source, and the contract every source meets."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally
from bot.errors import PermanentSourceError, TransientSourceError
from bot.ingest.sources import Source
from bot.ingest.sources.file import FileSource
from bot.ingest.sources.http import HttpOptions
from bot.ingest.sources.http_csv import HttpCsvSource
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.manual import ManualSource
from bot.ingest.sources.replay import ReplaySource
from bot.testing.clock import FakeClock
from bot.testing.sources import FakeSource

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)
T0 = datetime(2021, 4, 8, 22, 0, tzinfo=UTC)


def tally(yes: int, no: int) -> Tally:
    return Tally("bessemer-2021", {"yes": yes, "no": no}, T0, "fake")


async def test_the_fake_hands_out_what_was_queued_in_order() -> None:
    fake = FakeSource("nlrb-feed")
    first, second = tally(1, 2), tally(3, 4)
    boom = TransientSourceError("503")
    fake.set(first)
    fake.fail(boom, times=2)
    fake.set(second)
    async with fake:
        assert await fake.fetch() is first
        for _ in range(2):
            with pytest.raises(TransientSourceError) as info:
                await fake.fetch()
            assert info.value is boom
        assert await fake.fetch() is second
        assert fake.pending == 0
        assert await fake.fetch() is None
    assert fake.fetches == 5
    assert (fake.entered, fake.exited) == (1, 1)


async def test_the_fake_insists_on_the_lifecycle() -> None:
    fake = FakeSource()
    with pytest.raises(RuntimeError, match="outside 'async with'"):
        await fake.fetch()
    async with fake:
        with pytest.raises(RuntimeError, match="already open"):
            await fake.__aenter__()
    with pytest.raises(ValueError, match="times"):
        fake.fail(PermanentSourceError("x"), times=0)


async def test_the_manual_source_is_never_polled_and_never_has_news() -> None:
    async with ManualSource() as manual:
        assert manual.polled is False
        assert manual.name == "manual"
        assert await manual.fetch() is None


def test_every_source_meets_the_contract(tmp_path: Path) -> None:
    clock = FakeClock()
    sources: list[object] = [
        FakeSource(),
        ManualSource(),
        HttpJsonSource(COUNT, HttpOptions("http://127.0.0.1/"), clock=clock),
        HttpCsvSource(COUNT, HttpOptions("http://127.0.0.1/"), clock=clock),
        FileSource(COUNT, tmp_path / "f.json", clock=clock),
        ReplaySource(COUNT, tmp_path / "r.jsonl", clock=clock),
    ]
    for source in sources:
        assert isinstance(source, Source), type(source).__name__
    assert not isinstance(object(), Source)
    typed: list[Source] = [FakeSource(), ManualSource()]  # mypy checks the structure too
    assert [s.polled for s in typed] == [True, False]
