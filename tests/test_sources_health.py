"""Source health: stale and recovered are each reported once, on a FakeClock."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.errors import ConfigError, PermanentSourceError, TransientSourceError
from bot.ingest.sources.health import SourceHealth
from bot.testing.clock import FakeClock


def test_stale_after_max_failures_in_a_row_reported_once_then_recovered_once() -> None:
    clock = FakeClock()
    health = SourceHealth(clock, max_failures=3, stale_after=3600)
    timeout = TransientSourceError("timed out")
    assert [health.record_failure(timeout) for _ in range(5)] == [False, False, True, False, False]
    assert health.is_stale
    assert health.consecutive_failures == 5
    assert health.last_error is timeout
    assert health.record_success(changed=False) is True
    assert not health.is_stale
    assert health.consecutive_failures == 0
    assert health.record_success(changed=False) is False
    assert health.last_error is timeout  # kept for status displays


def test_a_success_resets_the_run_of_failures() -> None:
    health = SourceHealth(FakeClock(), max_failures=2, stale_after=3600)
    err = PermanentSourceError("HTTP 404")
    assert health.record_failure(err) is False
    assert health.record_success(changed=True) is False  # was never reported stale
    assert health.record_failure(err) is False
    assert health.record_failure(err) is True


def test_stale_after_too_long_without_a_good_fetch() -> None:
    clock = FakeClock()
    health = SourceHealth(clock, max_failures=100, stale_after=60)
    clock.advance(59)
    assert not health.is_stale
    assert health.check() is False
    clock.advance(1)
    assert health.is_stale
    assert health.check() is True
    assert health.check() is False
    assert health.record_failure(TransientSourceError("503")) is False  # already reported
    assert health.record_success(changed=False) is True
    clock.advance(30)
    assert health.record_failure(TransientSourceError("503")) is False
    clock.advance(30)
    assert health.record_failure(TransientSourceError("503")) is True  # 60 s since good


def test_a_good_fetch_that_changed_nothing_still_counts_as_good() -> None:
    clock = FakeClock()
    health = SourceHealth(clock, stale_after=60)
    for _ in range(5):
        clock.advance(30)
        health.record_success(changed=False)
    assert not health.is_stale
    assert health.seconds_since_good() == 0


def test_times_are_taken_from_the_clock() -> None:
    clock = FakeClock()
    health = SourceHealth(clock)
    assert (health.last_checked, health.last_changed, health.last_error) == (None, None, None)
    health.record_success(changed=True)
    changed_at = clock.now()
    clock.advance(10)
    health.record_success(changed=False)
    assert health.last_changed == changed_at
    assert health.last_checked == clock.now()
    assert health.last_success == clock.now()
    clock.advance(10)
    health.record_failure(TransientSourceError("x"))
    assert health.last_checked == health.last_error_at == clock.now()
    assert health.last_success == changed_at + timedelta(seconds=10)


def test_settings_are_checked() -> None:
    with pytest.raises(ConfigError, match="max_failures"):
        SourceHealth(FakeClock(), max_failures=0)
    with pytest.raises(ConfigError, match="stale_after"):
        SourceHealth(FakeClock(), stale_after=0)
