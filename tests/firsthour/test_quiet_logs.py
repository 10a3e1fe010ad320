"""Logs a newcomer can read: no warnings about voice support the bot never uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.firsthour.conftest import clean_env

START_A_CLIENT = """
import asyncio, logging
logging.basicConfig(level=logging.DEBUG)
import adapters.discord.adapter
import discord

async def main():
    client = discord.Client(intents=discord.Intents.none())
    await client.close()

asyncio.run(main())
"""


def test_discord_says_nothing_about_voice_support(fresh_repo: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", START_A_CLIENT],
        cwd=fresh_repo,
        env=clean_env(fresh_repo),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "PyNaCl is not installed" not in result.stderr
    assert "davey is not installed" not in result.stderr
    assert "DEBUG" in result.stderr  # the log was on: discord.py had its chance to say it
