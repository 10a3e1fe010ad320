"""Backoff with full jitter, and retrying only what is worth retrying (bot/base/retry.py)."""

from __future__ import annotations

import asyncio
import doctest
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import bot.base.retry
from bot.base.retry import (
    backoff,
    parse_retry_after,
    retry_after_header,
    retry_after_hint,
    retry_transient,
)
from bot.errors import PermanentSourceError, TransientDeliveryError, TransientSourceError
from bot.ingest.sources.http import HttpTransientError


class Sleeps:
    """A fake ``sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class Flaky:
    """Raises the given errors in turn, then returns ``"ok"``."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def transient(exc: BaseException) -> bool:
    return isinstance(exc, TransientSourceError)


@given(
    attempt=st.integers(min_value=0, max_value=2000),
    base=st.floats(min_value=0.01, max_value=5),
    cap=st.floats(min_value=0.01, max_value=120),
    seed=st.integers(),
)
def test_backoff_stays_within_full_jitter_bounds(
    attempt: int, base: float, cap: float, seed: int
) -> None:
    delay = backoff(attempt, base=base, cap=cap, rng=random.Random(seed))
    assert 0.0 <= delay <= min(cap, base * 2.0 ** min(attempt, 1023))


def test_backoff_is_jittered_and_grows_until_the_cap() -> None:
    rng = random.Random(1)
    draws = {a: [backoff(a, rng=rng) for _ in range(2000)] for a in (0, 3, 10)}
    assert len(set(draws[0])) > 1900  # spread, not a fixed schedule
    assert max(draws[0]) <= 0.5
    assert max(draws[3]) <= 4.0
    assert max(draws[3]) > 3.5
    assert max(draws[10]) <= 30.0
    assert max(draws[10]) > 29.0
    assert min(draws[10]) < 1.0  # full jitter: the floor is 0, not the ceiling


def test_the_module_examples_hold() -> None:
    result = doctest.testmod(bot.base.retry)
    assert result.attempted >= 3
    assert result.failed == 0


def test_backoff_refuses_nonsense() -> None:
    with pytest.raises(ValueError, match="attempt must be >= 0"):
        backoff(-1)


async def test_transient_errors_are_retried_with_jittered_delays() -> None:
    sleeps = Sleeps()
    fn = Flaky(TransientSourceError("503"), TransientSourceError("timeout"))
    result = await retry_transient(
        fn, attempts=5, sleep=sleeps, is_transient=transient, rng=random.Random(42)
    )
    assert result == "ok"
    assert fn.calls == 3
    same = random.Random(42)
    assert sleeps.delays == [same.uniform(0, 0.5), same.uniform(0, 1.0)]


async def test_delays_respect_the_bounds_for_each_attempt() -> None:
    sleeps = Sleeps()
    fn = Flaky(*[TransientSourceError(str(i)) for i in range(8)])
    await retry_transient(fn, attempts=9, sleep=sleeps, is_transient=transient, cap=10.0)
    assert len(sleeps.delays) == 8
    for attempt, delay in enumerate(sleeps.delays):
        assert 0.0 <= delay <= min(10.0, 0.5 * 2**attempt)


async def test_permanent_errors_are_not_retried() -> None:
    sleeps = Sleeps()
    boom = PermanentSourceError("HTTP 404")
    fn = Flaky(boom)
    with pytest.raises(PermanentSourceError) as info:
        await retry_transient(fn, attempts=5, sleep=sleeps, is_transient=transient)
    assert info.value is boom
    assert fn.calls == 1
    assert sleeps.delays == []


async def test_the_last_error_is_raised_when_attempts_run_out() -> None:
    sleeps = Sleeps()
    errors = [TransientSourceError(f"try {i}") for i in range(3)]
    fn = Flaky(*errors, TransientSourceError("never reached"))
    with pytest.raises(TransientSourceError) as info:
        await retry_transient(fn, attempts=3, sleep=sleeps, is_transient=transient)
    assert info.value is errors[2]
    assert fn.calls == 3
    assert len(sleeps.delays) == 2


async def test_a_retry_after_hint_is_never_undercut() -> None:
    sleeps = Sleeps()
    fn = Flaky(
        HttpTransientError("429", status=429, retry_after=42.0),
        HttpTransientError("503", status=503, retry_after=0.0),
        HttpTransientError("timeout"),
    )
    await retry_transient(
        fn,
        attempts=4,
        sleep=sleeps,
        is_transient=transient,
        rng=random.Random(3),
        retry_after=retry_after_hint,
    )
    same = random.Random(3)
    expected = [max(42.0, same.uniform(0, 0.5)), same.uniform(0, 1.0), same.uniform(0, 2.0)]
    assert sleeps.delays == expected
    assert sleeps.delays[0] == 42.0  # above the 30 s cap: the server's word wins


async def test_hints_without_a_retry_after_callback_are_ignored() -> None:
    sleeps = Sleeps()
    fn = Flaky(HttpTransientError("429", status=429, retry_after=42.0))
    await retry_transient(fn, attempts=2, sleep=sleeps, is_transient=transient)
    assert sleeps.delays[0] <= 0.5


def test_retry_after_hints_are_read_from_any_error_that_carries_one() -> None:
    assert retry_after_hint(HttpTransientError("x", retry_after=3)) == 3.0
    assert retry_after_hint(TransientDeliveryError("x", retry_after=1.5)) == 1.5
    assert retry_after_hint(TransientDeliveryError("x")) is None
    assert retry_after_hint(HttpTransientError("x", retry_after=-1)) is None
    assert retry_after_hint(HttpTransientError("x", retry_after=float("nan"))) is None
    assert retry_after_hint(ValueError("x")) is None


async def test_cancellation_is_never_retried() -> None:
    sleeps = Sleeps()
    fn = Flaky(asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        await retry_transient(fn, attempts=5, sleep=sleeps, is_transient=lambda e: True)
    assert sleeps.delays == []


async def test_attempts_must_be_positive() -> None:
    with pytest.raises(ValueError, match="attempts must be >= 1"):
        await retry_transient(Flaky(), attempts=0, sleep=Sleeps(), is_transient=transient)


NOW = datetime(2026, 11, 3, 20, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("7", 7.0), (" 12 ", 12.0), ("1.5", 1.5), ("0", 0.0), (None, None), ("", None),
     ("-1", None), ("nan", None), ("inf", None), ("1e3", None), ("soon", None)],
)  # fmt: skip
def test_retry_after_delta_seconds(value: str | None, seconds: float | None) -> None:
    assert parse_retry_after(value) == seconds
    assert parse_retry_after(value, now=NOW) == seconds


def test_retry_after_as_a_date_needs_the_time_and_is_never_negative() -> None:
    later = (NOW + timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    earlier = (NOW - timedelta(seconds=90)).strftime("%a, %d %b %Y %H:%M:%S GMT")
    assert parse_retry_after(later, now=NOW) == 90.0
    assert parse_retry_after(earlier, now=NOW) == 0.0
    assert parse_retry_after(later) is None  # no clock: no guessing the time


def test_retry_after_is_found_in_headers_of_any_case_and_shape() -> None:
    assert retry_after_header({"Retry-After": "3"}) == 3.0
    assert retry_after_header({"retry-after": ["4", "9"]}) == 4.0
    assert retry_after_header({"Content-Type": "application/json"}) is None
    assert retry_after_header(None) is None
