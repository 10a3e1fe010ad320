"""SQLite serves one instance: a second ``tallybot run`` on the same file refuses to start,
naming the one that runs; once that one is killed (kill -9: no cleanup) the next starts. Each
instance shows its id on ``/healthz`` and on every ``/metrics`` sample."""

from __future__ import annotations

import signal
import sys
import urllib.request
from pathlib import Path

import pytest

from bot.cluster.single import SingleInstance, lock_path
from bot.errors import StoreError
from tests.firsthour.conftest import ROOT, Running, clean_env, get_json, run_process

CONFIG = """
[store]
url = "sqlite+aiosqlite:///{store}"
[console]
enabled = true
[server]
port = 0
[[counts]]
id = "bessemer-2021"
title = "Bessemer"
choices = [{{id = "yes", label = "Yes"}}, {{id = "no", label = "No"}}]
source = {{kind = "manual"}}
"""


def start(config: Path, started: list[Running], name: str) -> Running:
    env = clean_env(ROOT, TALLYBOT_INSTANCE_ID=name)
    command = [sys.executable, "-m", "bot", "run", "--config", str(config)]
    return run_process(command, cwd=config.parent, env=env, started=started)


def test_a_second_instance_on_one_sqlite_file_refuses_to_start_until_the_first_is_gone(
    tmp_path: Path, start_run: list[Running]
) -> None:
    config = tmp_path / "tallybot.toml"
    config.write_text(CONFIG.format(store=tmp_path / "var" / "tallybot.sqlite3"))
    first = start(config, start_run, "first")
    url = first.url()
    status, body = get_json(f"{url}/healthz")
    assert status == 200
    assert body["instance"] == {"id": "first", "counts": 0, "shards": []}  # how many, not which
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        samples = [x for x in resp.read().decode().splitlines() if x.startswith("tallybot_")]
    assert samples
    assert all('tallybot_instance="first"' in x for x in samples), samples

    second = start(config, start_run, "second")
    assert second.proc.wait(timeout=30) == 2
    second.drain()
    assert (
        f"tallybot: another tallybot instance (first) is running on the SQLite store "
        f"{tmp_path / 'var' / 'tallybot.sqlite3'}: SQLite serves one instance at a time"
    ) in second.log()
    assert "Traceback" not in second.log()
    assert first.proc.poll() is None

    first.stop(signal.SIGKILL)
    third = start(config, start_run, "third")
    status, body = get_json(f"{third.url()}/healthz")
    assert body["instance"] == {"id": "third", "counts": 0, "shards": []}
    third.stop(signal.SIGTERM)
    assert third.proc.returncode == 0, third.log()


async def test_the_lock_is_per_file_and_released_on_close(tmp_path: Path) -> None:
    path = lock_path(f"sqlite+aiosqlite:///{tmp_path / 'a.sqlite3'}")
    assert path == tmp_path / "a.sqlite3.lock"
    assert lock_path("sqlite+aiosqlite:///:memory:") is None
    assert lock_path("postgresql+asyncpg://u@h/db") is None
    async with SingleInstance(path, "one"):
        with pytest.raises(StoreError, match=r"another tallybot instance \(one\)"):
            async with SingleInstance(path, "two"):
                raise AssertionError("a second holder got the lock")
        async with SingleInstance(tmp_path / "b.sqlite3.lock", "two"):
            pass  # another file, another lock
    async with SingleInstance(path, "two"):
        pass
