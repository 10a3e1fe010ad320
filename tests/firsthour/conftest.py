"""The first hour of a new operator, walked on a fresh copy of the repository.

``fresh_repo`` is a copy of every file git knows of (tracked, or new and not ignored), made
once per session, with nothing built or cached in it: what a ``git clone`` gives a newcomer
(but for the bytecode of ``bot/`` and ``adapters/``, which a newcomer's first command writes:
compiled once here, as where ``PYTHONDONTWRITEBYTECODE`` is set every command would compile it).
The commands run as separate processes from it (``python -m bot``, or the ``tallybot`` script
with the copy first on ``PYTHONPATH``), as docs/how-to/run.md has the operator type them.
"""

from __future__ import annotations

import compileall
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
STOP_WITHIN = 5.0
"""Seconds a signal may take to stop the bot, in every state."""
START_WITHIN = 30.0


def tracked_files(root: Path) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    return [name for name in out.decode().split("\0") if name and (root / name).is_file()]


@pytest.fixture(scope="session")
def fresh_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the repository (see the module docstring)."""
    dest = tmp_path_factory.mktemp("fresh-clone") / "tallybot"
    for name in tracked_files(ROOT):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    for package in ("bot", "adapters"):
        compileall.compile_dir(dest / package, quiet=1)
    return dest


def clean_env(repo: Path, **extra: str) -> dict[str, str]:
    """The environment of a newcomer's shell: no tallybot secrets, the copy's code first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DISCORD_", "SLACK_", "TALLYBOT_", "FEED_", "MPLCONFIGDIR"))
    }
    env["PYTHONPATH"] = str(repo)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def tallybot(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``tallybot ARGS`` from the fresh copy, no standard input; its exit code and output."""
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd or repo,
        env=dict(env) if env is not None else clean_env(repo),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@dataclass
class Running:
    """A ``tallybot run`` process and the log lines it wrote to stderr so far."""

    proc: subprocess.Popen[bytes]
    lines: list[dict[str, object]] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    _pending: bytes = b""

    def read_until(
        self, msg: str, within: float = START_WITHIN, *, starts: bool = False
    ) -> dict[str, object]:
        """Read log lines until one says ``msg`` (``starts``: begins with it), at the process's
        own pace, bounded by ``within``."""
        deadline = time.monotonic() + within
        while True:
            while b"\n" in self._pending:
                line, self._pending = self._pending.split(b"\n", 1)
                record = self._add(line.decode(errors="replace") + "\n")
                said = str(record.get("msg")) if record is not None else None
                if record is not None and (said == msg or (starts and said.startswith(msg))):
                    return record
            chunk = self._read(deadline - time.monotonic())
            if not chunk:
                raise AssertionError(f"no {msg!r} in the log:\n{self.log()}")
            self._pending += chunk

    def _add(self, line: str) -> dict[str, object] | None:
        self.raw.append(line)
        try:
            record = json.loads(line)
        except ValueError:
            return None
        if isinstance(record, dict):
            self.lines.append(record)
            return record
        return None

    def _read(self, timeout: float) -> bytes:
        """What the process wrote to stderr, waiting at most ``timeout`` s (b"": end or time up)."""
        stream = self.proc.stderr
        assert stream is not None
        with selectors.DefaultSelector() as sel:
            sel.register(stream, selectors.EVENT_READ)
            if timeout <= 0 or not sel.select(timeout):
                return b""
        return os.read(stream.fileno(), 65536)

    def url(self) -> str:
        return str(self.read_until("ops server listening")["url"])

    def stop(self, sig: int = signal.SIGTERM) -> float:
        """Send ``sig`` and wait for the exit; the seconds it took."""
        started = time.monotonic()
        self.proc.send_signal(sig)
        self.proc.wait(timeout=STOP_WITHIN + 5)
        took = time.monotonic() - started
        self.drain()
        return took

    def drain(self) -> None:
        """Read the rest of stderr (the process has ended)."""
        assert self.proc.stderr is not None
        rest = self._pending + self.proc.stderr.read()
        self._pending = b""
        for line in rest.decode(errors="replace").splitlines(keepends=True):
            self._add(line)

    def log(self) -> str:
        return "".join(self.raw)

    def messages(self) -> list[str]:
        return [str(r.get("msg")) for r in self.lines]


@pytest.fixture
def start_run() -> Iterator[list[Running]]:
    """Started ``tallybot run`` processes, killed after the test if still running."""
    started: list[Running] = []
    yield started
    for running in started:
        if running.proc.poll() is None:
            running.proc.kill()
            running.proc.wait(timeout=10)
        if running.proc.stderr is not None:
            running.proc.stderr.close()


def run_process(
    command: list[str], *, cwd: Path, env: Mapping[str, str], started: list[Running]
) -> Running:
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    running = Running(proc)
    started.append(running)
    return running


def get_json(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def example_for_tests(repo: Path, dest: Path) -> Path:
    """The example config as an operator would first run it, on a free port (0) and with its
    store in ``dest``: nothing else changed."""
    text = (repo / "config" / "example.toml").read_text()
    text = text.replace("port = 8080 ", "port = 0    ", 1)
    assert "port = 0 " in text
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / "tallybot.toml"
    path.write_text(text)
    return path
