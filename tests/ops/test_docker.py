"""The image's HEALTHCHECK command, taken from the Dockerfile and run against a live server (no
Docker engine needed), and the settings the image promises."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
from pathlib import Path

import pytest

from tests.ops.conftest import Bot

ROOT = Path(__file__).resolve().parents[2]


def dockerfile() -> str:
    return (ROOT / "Dockerfile").read_text().replace("\\\n", " ")


def healthcheck() -> list[str]:
    match = re.search(r"^HEALTHCHECK .*?CMD (\[.*\])$", dockerfile(), re.MULTILINE)
    assert match is not None, "no HEALTHCHECK ... CMD [...] in the Dockerfile"
    command: list[str] = json.loads(match.group(1))
    assert command[0] == "python"
    return [sys.executable, *command[1:]]


async def run_healthcheck(url: str) -> int:
    env = {**os.environ, "TALLYBOT_HEALTHCHECK_URL": url}
    proc = await asyncio.create_subprocess_exec(
        *healthcheck(),
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    return await asyncio.wait_for(proc.wait(), timeout=20)


@pytest.mark.slow  # three real Python processes
async def test_the_healthcheck_passes_on_healthz_and_fails_without_it(bot: Bot) -> None:
    assert await run_healthcheck(f"{bot.url}/healthz") == 0
    assert await run_healthcheck(f"{bot.url}/nothing-here") == 1
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert await run_healthcheck(f"http://127.0.0.1:{port}/healthz") == 1


def test_the_image_runs_unprivileged_with_a_store_volume() -> None:
    text = dockerfile()
    assert len(re.findall(r"^FROM ", text, re.MULTILINE)) == 2
    (user,) = re.findall(r"^USER (\S+)$", text, re.MULTILINE)
    assert user.split(":")[0] not in ("0", "root")
    assert 'VOLUME ["/app/var"]' in text
    assert "ENV" in text
    assert "TALLYBOT_HEALTHCHECK_URL=http://127.0.0.1:8080/healthz" in text
    assert 'CMD ["python", "-m", "bot", "run"]' in text
    assert "TALLYBOT_CONFIG=/app/config/tallybot.toml" in text
    compose = (ROOT / "docker-compose.yml").read_text()
    for needed in ("tallybot-var:/app/var", "TALLYBOT_CONFIG: /app/config/tallybot.toml"):
        assert needed in compose
