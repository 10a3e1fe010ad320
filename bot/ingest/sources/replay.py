"""Play back a recorded timeline (see :mod:`bot.ingest.sources.timeline`) against the injected clock.

The first :meth:`ReplaySource.fetch` starts the playback. From then on a fetch returns the
newest entry whose ``at / speed`` seconds have passed since the start (entries in between are
skipped), or None when that is the entry returned last time, or when none is due yet. At speed
60 an hour of counting plays in a minute. A tally keeps the time it was recorded at (the entry's
``observed_at``, which ``tallybot record`` writes): a count from April 2021 replayed today still
says "as of 8 Apr 2021". Entries without one are stamped with the clock's time.

Config (``kind = "replay"``)::

    [counts.source]
    kind = "replay"
    name = "replay"                     # optional, default "replay"; goes into Tally.source
    path = "recordings/bessemer.jsonl"  # required; relative paths resolve against the config's folder
    speed = 60                          # optional, default 1: how many times faster than recorded
"""  # noqa: E501

from __future__ import annotations

import asyncio
import bisect
import itertools
from collections.abc import Sequence
from pathlib import Path

from bot.base.clock import Clock
from bot.base.lifecycle import Closing
from bot.domain.model import Count, Tally
from bot.errors import ConfigError, PermanentSourceError
from bot.ingest.sources.timeline import TimelineEntry, parse_timeline

_EPSILON = 1e-9


class ReplaySource(Closing):
    """A recorded timeline played back at ``speed`` (see the module docstring)."""

    polled = True

    def __init__(
        self,
        count: Count,
        path: Path,
        *,
        clock: Clock,
        speed: float = 1.0,
        name: str = "replay",
    ) -> None:
        if not speed > 0:
            raise ConfigError(f"{name}: speed must be > 0, got {speed}")
        self.name = name
        self.count = count
        self.path = path
        self.speed = speed
        self._clock = clock
        self._entries: list[TimelineEntry] | None = None
        self._start: float | None = None
        self._last = -1
        self._again = False
        self.last_tally: Tally | None = None
        """The tally :meth:`fetch` returned last."""

    @classmethod
    def from_entries(
        cls,
        count: Count,
        entries: Sequence[TimelineEntry],
        *,
        clock: Clock,
        speed: float = 1.0,
        name: str = "replay",
    ) -> ReplaySource:
        """A replay of entries already in memory (``path`` is then only a label)."""
        if not entries:
            raise ConfigError(f"{name}: a replay needs at least one entry")
        if any(b.at < a.at for a, b in itertools.pairwise(entries)):
            raise ConfigError(f"{name}: entries must be in order of 'at'")
        source = cls(count, Path("<memory>"), clock=clock, speed=speed, name=name)
        source._entries = list(entries)
        return source

    @property
    def done(self) -> bool:
        """Whether the last entry has been returned."""
        return self._entries is not None and self._last == len(self._entries) - 1

    @property
    def last_note(self) -> str | None:
        """The note of the entry returned last, if it had one."""
        if self._entries is None or self._last < 0:
            return None
        return self._entries[self._last].note

    def next_due(self) -> float | None:
        """Seconds until the next entry is due; 0 before the start; None when done."""
        if self._entries is None or self._start is None:
            return 0.0
        if self.done:
            return None
        upcoming = self._entries[self._last + 1]
        due = self._start + upcoming.at / self.speed
        return max(0.0, due - self._clock.monotonic())

    async def fetch(self) -> Tally | None:
        """The newest due entry as a tally, or None if none is due or it was returned last."""
        entries = await self._load()
        now = self._clock.monotonic()
        if self._start is None:
            self._start = now
        played = (now - self._start) * self.speed + _EPSILON
        due = bisect.bisect_right([e.at for e in entries], played) - 1
        if due < 0 or (due == self._last and not self._again):
            return None
        self._last = due
        self._again = False
        entry = entries[due]
        observed_at = entry.observed_at or self._clock.now()
        self.last_tally = entry.to_tally(self.count.id, observed_at=observed_at, source=self.name)
        return self.last_tally

    def forget(self) -> None:
        """Return the newest due entry again at the next fetch, even if it was returned last."""
        self._again = True

    async def _load(self) -> list[TimelineEntry]:
        if self._entries is None:
            try:
                text = await asyncio.to_thread(self.path.read_text, encoding="utf-8")
            except FileNotFoundError as exc:
                raise PermanentSourceError(f"{self.path}: no such recording") from exc
            except UnicodeDecodeError as exc:
                raise PermanentSourceError(f"{self.path}: not UTF-8 text ({exc.reason})") from exc
            except OSError as exc:
                raise PermanentSourceError(f"{self.path}: cannot read: {exc.strerror}") from exc
            self._entries = parse_timeline(text, self.count, str(self.path))
        return self._entries
