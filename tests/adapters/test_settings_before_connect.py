"""A typo anywhere in the file stops ``tallybot run`` before any adapter connects.

The whole file is checked in one pass (``bot.settings``) before the app starts: a misspelt key
in a count's ``[counts.source]`` table or in a platform's table is refused with its
did-you-mean, and the fake Discord the bot would log in to records no request and no gateway
connection. The same file without the typo does log in (so the test can fail).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.fakes.discord_fake import FakeDiscord

pytestmark = pytest.mark.slow  # real processes

TOKEN = "discord-test-token-0123456789"
ROOT = Path(__file__).resolve().parents[2]


def document(fake: FakeDiscord, tmp_path: Path, **typos: dict[str, Any]) -> Path:
    """A file running one count on the fake Discord, with ``typos`` merged into its tables."""
    source = {"kind": "http_json", "url": "https://example.org/f.json", "timeout": 5}
    discord = {"api_base": fake.base_url, "gateway_url": fake.gateway_url, "guilds": [1]}
    doc = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
        "discord": {**discord, **typos.get("discord", {})},
        "counts": [
            {
                "id": "bessemer-2021",
                "title": "Bessemer",
                "choices": [{"id": "yes"}, {"id": "no"}],
                "source": {**source, **typos.get("source", {})},
            }
        ],
    }
    path = tmp_path / "tallybot.toml"
    path.write_text(tomli_w.dumps(doc))
    return path


async def start_run(config: Path) -> asyncio.subprocess.Process:
    """``tallybot run`` as a service starts it: no terminal, only the token in its env."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISCORD_", "SLACK_", "TELEGRAM_", "TALLYBOT_"))
        and k.casefold() not in ("http_proxy", "https_proxy", "all_proxy")
    }
    env |= {"DISCORD_TOKEN": TOKEN, "PYTHONPATH": str(ROOT)}
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", "--config", str(config),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=env, cwd=config.parent,
    )  # fmt: skip


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(token=TOKEN) as fake:
        fake.add_guild("Bessemer Watch")
        yield fake


@pytest.mark.parametrize(
    ("typos", "problem"),
    [
        (
            {"source": {"timout": 5}},
            "counts[0].source.timout: unknown key (did you mean 'timeout'?)",
        ),
        (
            {"discord": {"guild": [1]}},
            "discord.guild: unknown key (did you mean 'guilds'?)",
        ),
    ],
    ids=["counts.source", "discord"],
)
async def test_a_typo_stops_run_before_any_adapter_connects(
    fake: FakeDiscord, tmp_path: Path, typos: dict[str, Any], problem: str
) -> None:
    config = document(fake, tmp_path, **typos)
    proc = await start_run(config)
    try:
        async with asyncio.timeout(45):
            _, err = await proc.communicate()
    finally:
        if proc.returncode is None:  # it got past the check: it is serving
            proc.kill()
            await proc.wait()
    assert proc.returncode == 2, err.decode()
    assert err.decode().splitlines() == [f"tallybot: {config}: {problem}"]
    assert fake.requests == []
    assert (fake.gateway.identify_count, len(fake.gateway.connections)) == (0, 0)


async def test_without_the_typo_the_same_file_logs_in(fake: FakeDiscord, tmp_path: Path) -> None:
    proc = await start_run(document(fake, tmp_path))
    try:
        await fake.wait_for(lambda: fake.gateway.identify_count >= 1, timeout=45)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        async with asyncio.timeout(15):
            await proc.communicate()
    assert fake.gateway.identify_count == 1
