"""The console: a terminal (a text stream here) is the one channel; its members see all of it."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from adapters.console.adapter import ConsoleAdapter
from bot.domain.subscription import ChannelRef, Platform
from bot.runtime.app import App
from bot.settings.loader import parse
from bot.store.sent_ledger import SentLedger
from bot.testing.clock import FakeClock
from tests.adapters.rigs.base import Hold, Rig, Seen, count_table


class Terminal(io.StringIO):
    """A text stream that keeps each write apart: rich writes each ``print`` in one."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


class ConsoleRig(Rig):
    name = "console"
    platform: ClassVar[Platform] = Platform("console")

    def __init__(self) -> None:
        super().__init__()
        self._clock = FakeClock()
        self._hold = Hold(self._clock.monotonic, self._clock.advance)
        self.out = Terminal()
        self.charts = Path()
        self._cfg: Any = None

    @property
    def clock(self) -> FakeClock:
        return self._clock

    @property
    def channels(self) -> tuple[ChannelRef, ChannelRef]:
        return ChannelRef(self.platform, "local", "a"), ChannelRef(self.platform, "local", "b")

    @property
    def hold(self) -> Hold:
        return self._hold

    @asynccontextmanager
    async def running(self, tmp_path: Path, title: str) -> AsyncIterator[App]:
        self.charts = tmp_path / "charts"
        cfg = parse(
            {
                "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
                "counts": [count_table(title)],
            },
            tmp_path / "tallybot.toml",
        )

        self._cfg = cfg
        async with self.bots() as app:
            yield app

    @asynccontextmanager
    async def bot(self) -> AsyncIterator[App]:
        def factory(commands: Any) -> ConsoleAdapter:
            ledger = SentLedger(commands.db, self.platform, self._clock)
            return ConsoleAdapter(out=self.out, rich=False, save_dir=self.charts, ledger=ledger)

        app = App(
            self._cfg,
            {self.platform: factory},
            clock=self._clock,
            sleep=self._hold.sleep,
            poll=False,
        )
        async with app:
            yield app

    def seen(self, channel: ChannelRef) -> list[Seen]:
        """Everything printed (a terminal cannot tell its channels apart); a chart saved is
        shown with the message printed before it."""
        found: list[Seen] = []
        for text in (w for w in self.out.writes if w.strip()):
            saved = text.startswith("Saved: ") and text.rstrip().endswith(".png")
            if saved and found and Path(text.removeprefix("Saved: ").strip()).is_file():
                found[-1] = replace(found[-1], images=found[-1].images + 1)
            else:
                found.append(Seen(str(len(found)), text, 0, ()))
        return found
