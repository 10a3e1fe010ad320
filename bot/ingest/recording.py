"""``tallybot record``: poll one count's source and append every accepted tally to a timeline.

The timeline replays with ``tallybot replay`` (or a ``replay`` source) for rehearsals. Each
tally recorded is shown as it comes in; recording stops by itself once the count is final.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bot.base.clock import Clock, Sleep, SystemClock
from bot.domain.detect import Accepted, detect
from bot.domain.model import Tally, TallyState
from bot.errors import ConfigError, SourceError
from bot.ingest.pipeline import figures
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.record import Recorder
from bot.settings.loader import Config


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
