"""Subscription options on Telegram: the filters work as everywhere; threads, pins and mentions
are refused with a clear "not supported on Telegram", through the real aiogram Bot and the
core's own command handler."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from adapters.telegram.settings import TelegramSettings
from bot.commands.handler import Commands
from bot.commands.throttle import Throttle
from bot.delivery.pacing import Window
from bot.domain.subscription import Hear
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.testing.clock import FakeClock
from tests.adapters.telegram.conftest import shown
from tests.adapters.telegram.test_commands import commands, handle_all
from tests.fakes.telegram_fake import FakeTelegram
from tests.helpers import bessemer

if TYPE_CHECKING:
    from aiogram import Bot


async def test_filters_yes_threads_pins_and_mentions_not_on_telegram(
    fake: FakeTelegram, bot: Bot, clock: FakeClock, tmp_path: Path
) -> None:
    from adapters.telegram.once import MemoryLedger

    alice = fake.add_user("Alice")
    group = fake.add_group("Union hall")
    fake.add_member(group, alice)
    dm = fake.private_chat(alice)  # errors are private: they go there
    async with Database(f"sqlite+aiosqlite:///{tmp_path / 't.sqlite3'}") as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, replace(bessemer(), public=True))  # seen in any chat
        roomy = Throttle(clock, per_user=Window(100, 1.0), public_per_channel=Window(100, 1.0))
        core = Commands(db, Pipeline(db, clock), clock, throttle=roomy)
        tc = commands(bot, clock, core.handle, TelegramSettings(), MemoryLedger())  # type: ignore[arg-type]
        for options in ("thread", "live pin", "mention=@organisers", "final calls close=2%"):
            fake.command(group, alice, f"/count subscribe bessemer-2021 {options}")
        await handle_all(bot, tc)
        async with db.connect() as conn:
            subs = await sub_rows.for_count(conn, "bessemer-2021")
    said = [shown(m) for m in fake.visible(dm) if m.source != "user"]
    assert [m for m in fake.visible(group) if m.source != "user"] == [
        m for m in fake.visible(group) if "Subscribed" in shown(m)
    ]
    assert said == [
        "Error: thread is not supported on Telegram; leave it out",
        "Error: pin is not supported on Telegram; leave it out",
        "Error: mention is not supported on Telegram; leave it out",
    ]
    (sub,) = subs
    assert sub.wants.hears == {Hear.FINAL, Hear.CALLS}
