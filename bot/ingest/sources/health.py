"""How a count's source is doing, with the moments worth telling admins about.

The poller records every poll. :meth:`SourceHealth.record_failure` returns True exactly when the
source has just become stale, and :meth:`SourceHealth.record_success` returns True exactly when
a stale source has just recovered, so admins hear once about each, not on every poll. A source
is stale after ``max_failures`` failed polls in a row, or when ``stale_after`` seconds have
passed without a good fetch (measured on the injected clock's monotonic time, starting when the
health tracker is created). :meth:`SourceHealth.check` reports the time-based transition for a
watchdog that runs even when polls do not.
"""

from __future__ import annotations

from datetime import datetime

from bot.base.clock import Clock
from bot.errors import ConfigError, SourceError

DEFAULT_MAX_FAILURES = 3
DEFAULT_STALE_AFTER = 300.0


class SourceHealth:
    """The health of one count's source (see the module docstring)."""

    def __init__(
        self,
        clock: Clock,
        *,
        max_failures: int = DEFAULT_MAX_FAILURES,
        stale_after: float = DEFAULT_STALE_AFTER,
    ) -> None:
        if max_failures < 1:
            raise ConfigError(f"max_failures must be >= 1, got {max_failures}")
        if not stale_after > 0:
            raise ConfigError(f"stale_after must be > 0 seconds, got {stale_after}")
        self.max_failures = max_failures
        self.stale_after = stale_after
        self._clock = clock
        self._last_good = clock.monotonic()
        self._reported_stale = False
        self.last_checked: datetime | None = None
        """When the source was last polled, successfully or not."""
        self.last_success: datetime | None = None
        """When the source last answered without an error."""
        self.last_changed: datetime | None = None
        """When the source last gave a new tally."""
        self.last_error: SourceError | None = None
        """The most recent error (kept after a recovery, for status displays)."""
        self.last_error_at: datetime | None = None
        """When :attr:`last_error` happened."""
        self.consecutive_failures = 0
        """Failed polls since the last good one."""

    @property
    def is_stale(self) -> bool:
        """Too many failures in a row, or too long without a good fetch."""
        if self.consecutive_failures >= self.max_failures:
            return True
        return self.seconds_since_good() >= self.stale_after

    def seconds_since_good(self) -> float:
        """Seconds since the last good fetch (or since tracking began)."""
        return self._clock.monotonic() - self._last_good

    def record_success(self, changed: bool) -> bool:
        """A good fetch (``changed``: it gave a new tally); True if it ends a stale spell."""
        now = self._clock.now()
        self.last_checked = now
        self.last_success = now
        if changed:
            self.last_changed = now
        self.consecutive_failures = 0
        self._last_good = self._clock.monotonic()
        recovered = self._reported_stale
        self._reported_stale = False
        return recovered

    def record_failure(self, error: SourceError) -> bool:
        """A failed fetch; True exactly when it makes the source stale."""
        now = self._clock.now()
        self.last_checked = now
        self.last_error = error
        self.last_error_at = now
        self.consecutive_failures += 1
        return self.check()

    def check(self) -> bool:
        """True exactly once when the source has become stale and that was not yet reported."""
        if self._reported_stale or not self.is_stale:
            return False
        self._reported_stale = True
        return True
