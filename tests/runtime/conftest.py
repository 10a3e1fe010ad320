"""Fixtures for the running bot: a real SQLite store file, a fake clock, a recording adapter."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.store import Database
from bot.store import counts as count_rows
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.helpers import bessemer


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store_file(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'var' / 'tallybot.sqlite3'}"


@pytest.fixture
async def sqlite_db(store_file: str) -> AsyncIterator[Database]:
    async with Database(store_file) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, bessemer())
        yield db


@pytest.fixture
def recorder() -> RecordingAdapter:
    return RecordingAdapter()
