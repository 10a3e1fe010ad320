"""Fixtures of the Telegram adapter's tests: one injected clock, the loopback fake on it, the
real aiogram Bot pointed at the fake, and helpers to read what members see."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

from adapters.telegram.render import WORD_JOINER
from bot.testing.clock import FakeClock
from tests.fakes.telegram_fake import FakeTelegram, StoredMessage
from tests.fakes.telegram_fake.testing import aiogram_bot

if TYPE_CHECKING:
    from aiogram import Bot

LIVE = frozenset(
    {"mention", "url", "email", "hashtag", "cashtag", "bot_command", "text_link", "text_mention",
     "phone_number", "custom_emoji"}
)  # fmt: skip
"""Entities that ping, link or act when tapped."""


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


def shown(message: StoredMessage) -> str:
    """What a member reads: the text (or caption), invisible word joiners aside."""
    return (message.text or message.caption or "").replace(WORD_JOINER, "")


def live_entities(message: StoredMessage) -> list[str]:
    """The entities of ``message`` that would ping or link (Telegram's own detection too)."""
    found = [*message.entities, *message.caption_entities]
    return [f"{e['type']}:{e['offset']}+{e['length']}" for e in found if e["type"] in LIVE]
