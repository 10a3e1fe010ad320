"""``tallybot record``: poll one count's source and append every accepted tally to a timeline.

The timeline replays with ``tallybot replay`` (or a ``replay`` source) for rehearsals. Each
tally recorded is shown as it comes in; recording stops by itself once the count is final.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO

from bot.base.clock import Clock, Sleep, SystemClock
from bot.base.lifecycle import Closing
from bot.domain.detect import Accepted, detect
from bot.domain.model import Tally, TallyState
from bot.errors import ConfigError, SourceError, StoreError
from bot.ingest.pipeline import figures
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.timeline import TimelineEntry
from bot.settings.loader import Config

# Record accepted tallies as a timeline (see :mod:`bot.ingest.sources.timeline`) for later replay.
#
#     async with Recorder(Path("recordings/bessemer.jsonl")) as recorder:
#         await recorder.record(tally)
#
# Each tally becomes one line, written and fsynced before :meth:`Recorder.record` returns, so a
# crash loses at most the tally being written. ``at`` is the tally's ``observed_at`` in seconds
# since the first tally of the recording. Appending to an existing recording (the bot restarted
# mid-count) continues its clock: the start is taken from its first line's ``observed_at`` and
# ``at``, and ``at`` never goes below the last line's.


class Recorder(Closing):
    """Appends tallies to a JSON Lines timeline file, one fsynced line each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self._origin: datetime | None = None
        self._last_at = 0.0
        self._resume_at: float | None = None
        self._count_id: str | None = None
        self._lock = asyncio.Lock()

    async def aopen(self) -> None:
        """Open the file for appending (creating it), and pick up an existing recording."""
        if self._file is not None:
            raise RuntimeError(f"{self.path}: recorder already open")
        self._file = await asyncio.to_thread(self._open)

    async def aclose(self) -> None:
        """Close the file."""
        f, self._file = self._file, None
        if f is not None:
            await asyncio.to_thread(f.close)

    def _open(self) -> IO[str]:
        try:
            if self.path.exists():
                self._resume(self.path.read_text(encoding="utf-8"))
            return self.path.open("a", encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise StoreError(f"{self.path}: cannot open the recording: {exc}") from exc

    def _resume(self, text: str) -> None:
        seen = False
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                at = float(raw["at"])
                started = raw.get("observed_at")
                origin = (
                    datetime.fromisoformat(started) - timedelta(seconds=at)
                    if isinstance(started, str)
                    else None
                )
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                raise StoreError(
                    f"{self.path}: line {n} is not a timeline entry ({exc}); "
                    "fix or move the file before recording into it"
                ) from exc
            if not seen:
                self._origin = origin
                seen = True
            self._last_at = at
        if seen and self._origin is None:
            self._resume_at = self._last_at

    async def record(self, tally: Tally, *, note: str | None = None) -> float:
        """Append ``tally`` (with an optional note) and fsync; returns its ``at``."""
        if self._file is None:
            raise RuntimeError(f"{self.path}: record() outside 'async with'")
        async with self._lock:
            if self._count_id is None:
                self._count_id = tally.count_id
            elif tally.count_id != self._count_id:
                raise ValueError(
                    f"{self.path}: recording count {self._count_id!r}, got {tally.count_id!r}"
                )
            if self._origin is None:
                offset = self._resume_at or 0.0
                self._origin = tally.observed_at - timedelta(seconds=offset)
            at = (tally.observed_at - self._origin).total_seconds()
            at = round(max(at, self._last_at), 6)
            line = TimelineEntry.from_tally(tally, at, note=note).to_json() + "\n"
            try:
                await asyncio.to_thread(_append, self._file, line)
            except OSError as exc:
                raise StoreError(f"{self.path}: cannot append to the recording: {exc}") from exc
            self._last_at = at
            return at


def _append(f: IO[str], line: str) -> None:
    f.write(line)
    f.flush()
    os.fsync(f.fileno())


async def record_count(
    cfg: Config,
    count_id: str,
    out: Path,
    *,
    clock: Clock | None = None,
    sleep: Sleep = asyncio.sleep,
    polls: int | None = None,
    say: Callable[[str], None] = print,
) -> int:
    """Poll ``count_id`` each interval and return the lines added: until the count is final,
    after ``polls`` polls, or until cancelled. ``say`` is told each tally recorded (and each
    failed poll) as it goes."""
    cc = cfg.count(count_id)
    if cc is None:
        raise ConfigError(f"{cfg.path}: no count {count_id!r}")
    clock = clock or SystemClock()
    source = build_source(
        cc.count, cc.source, clock=clock, base_dir=cfg.base_dir, where=f"{cfg.path}: {count_id}"
    )
    written = 0
    last: Tally | None = None
    async with source, Recorder(out) as recorder:
        n = 0
        while polls is None or n < polls:
            n += 1
            try:
                tally = await source.fetch()
            except SourceError as exc:
                say(f"poll failed: {exc}")
                tally = None
            if tally is not None and isinstance(detect(cc.count, last, tally), Accepted):
                await recorder.record(tally)
                last = tally
                written += 1
                say(f"recorded #{written}: {figures(tally)}")
                if tally.state is TallyState.FINAL:
                    say(f"{count_id} is final: recording stopped")
                    break
            if polls is None or n < polls:
                await sleep(cc.interval)
    return written
