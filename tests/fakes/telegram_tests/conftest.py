"""Fixtures of the fake Telegram's own tests: one clock, the fake on it, and the real aiogram Bot
pointed at the fake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram
from tests.fakes.telegram_fake.testing import aiogram_bot

if TYPE_CHECKING:
    from aiogram import Bot


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def fake(clock: FakeClock) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(clock=clock.monotonic) as f:
        yield f


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[Bot]:
    async with aiogram_bot(fake) as b:
        yield b
