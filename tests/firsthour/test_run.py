"""``tallybot run`` as a newcomer starts it: from a service or a container (no terminal, no
standard input) it serves /readyz green until signalled, and stops within 5 s on SIGTERM,
whatever it is doing."""

from __future__ import annotations

import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.firsthour.conftest import (
    STOP_WITHIN,
    Running,
    clean_env,
    example_for_tests,
    get_json,
    run_process,
)


def run_example(repo: Path, tmp_path: Path, started: list[Running]) -> Running:
    config = example_for_tests(repo, tmp_path / "site")
    return run_process(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=config.parent,
        env=clean_env(repo),
        started=started,
    )


def test_without_a_terminal_the_console_stays_off_and_the_bot_serves_until_sigterm(
    fresh_repo: Path, tmp_path: Path, start_run: list[Running]
) -> None:
    bot = run_example(fresh_repo, tmp_path, start_run)
    url = bot.url()
    status, body = get_json(f"{url}/readyz")
    assert (status, body["status"]) == (200, "ready"), body
    assert bot.proc.poll() is None  # still serving: end of input is not a reason to stop
    took = bot.stop(signal.SIGTERM)
    assert took < STOP_WITHIN, bot.log()
    assert bot.proc.returncode == 0, bot.log()
    messages = bot.messages()
    assert messages.count("console adapter off: standard input is not a terminal") == 1
    kept = [m for m in messages if m.endswith(" objects kept out of the garbage collector's walks")]
    assert len(kept) == 1, messages  # once up: start-up's heap is never walked again
    assert "Traceback" not in bot.log()
    assert "CancelledError" not in bot.log()
    assert any(m.startswith("stopped in ") for m in messages)


class Hanging:
    """A feed that accepts connections and never answers (a poll stays in flight)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connected = threading.Event()
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            self.connected.set()

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    feed = Hanging()
    yield feed
    feed.close()


def test_sigterm_stops_a_bot_in_the_middle_of_a_poll(
    fresh_repo: Path, tmp_path: Path, start_run: list[Running], hanging: Hanging
) -> None:
    config = example_for_tests(fresh_repo, tmp_path / "site")
    text = config.read_text().replace(
        "https://example.org/bessemer.json", f"http://127.0.0.1:{hanging.port}/bessemer.json"
    )
    config.write_text(text.replace("timeout = 10 ", "timeout = 60 "))
    bot = run_process(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=config.parent,
        env=clean_env(fresh_repo),
        started=start_run,
    )
    bot.url()
    assert hanging.connected.wait(30), bot.log()  # the poll is waiting for an answer now
    took = bot.stop(signal.SIGTERM)
    assert took < STOP_WITHIN, bot.log()
    assert bot.proc.returncode == 0
    assert "Traceback" not in bot.log(), bot.log()


def test_run_refuses_what_check_config_refuses_before_starting(
    fresh_repo: Path, tmp_path: Path, start_run: list[Running]
) -> None:
    config = example_for_tests(fresh_repo, tmp_path / "site")
    config.write_text(config.read_text() + '\n[discord]\nguilds = ["my-server"]\n')
    bot = run_process(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=config.parent,
        env=clean_env(fresh_repo),
        started=start_run,
    )
    assert bot.proc.wait(timeout=30) == 2
    bot.drain()
    log = bot.log()
    assert 'guilds[0]: "my-server" (text) is not a server id' in log
    assert "discord: DISCORD_TOKEN is not set" in log
    assert "Traceback" not in log
    assert not (config.parent / "var").exists()  # nothing was started


def test_a_call_stuck_in_a_worker_thread_does_not_hold_up_the_exit() -> None:
    from bot.runtime.run import DaemonExecutor

    release = threading.Event()
    executor = DaemonExecutor(max_workers=2)
    stuck = executor.submit(release.wait, 60)  # a DNS lookup of an unreachable feed, say
    quick = executor.submit(sum, [1, 2, 3])
    assert quick.result(timeout=10) == 6
    executor.shutdown(wait=True)  # returns at once: asyncio.run's shutdown does not wait
    assert not stuck.done()
    workers = [t for t in threading.enumerate() if t.name == "tallybot-call"]
    assert workers
    assert all(t.daemon for t in workers)  # nor does the interpreter's exit
    release.set()
    assert stuck.result(timeout=10) is True


def test_sighup_brings_the_files_counts_into_the_store_and_a_broken_file_changes_nothing(
    fresh_repo: Path, tmp_path: Path, start_run: list[Running]
) -> None:
    config = example_for_tests(fresh_repo, tmp_path / "site")
    bot = run_example_at(fresh_repo, config, start_run)
    url = bot.url()
    original = config.read_text()
    config.write_text(original + "\n[[counts]]\nbad = 1\n")
    bot.proc.send_signal(signal.SIGHUP)
    bot.read_until("SIGHUP: the configuration file was not reloaded: ", within=20, starts=True)
    retitled = original.replace(
        'title = "Amazon BHM1 union election, Bessemer AL"', 'title = "Bessemer, retitled"', 1
    )
    assert retitled != original
    config.write_text(retitled)
    bot.proc.send_signal(signal.SIGHUP)
    said = bot.read_until(
        "counts from the configuration file: added none; changed ", 20, starts=True
    )
    assert str(said["msg"]).startswith(
        "counts from the configuration file: added none; changed bessemer-2021;"
    )
    status, body = get_json(f"{url}/readyz")
    assert status == 200, body  # still serving
    bot.proc.send_signal(signal.SIGHUP)  # the same file again: nothing to change
    again = bot.read_until(
        "counts from the configuration file: added none; changed ", 20, starts=True
    )
    assert str(again["msg"]).startswith(
        "counts from the configuration file: added none; changed none; left alone"
    )
    took = bot.stop(signal.SIGTERM)
    assert took < STOP_WITHIN, bot.log()
    assert "Traceback" not in bot.log()


def run_example_at(repo: Path, config: Path, started: list[Running]) -> Running:
    return run_process(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=config.parent,
        env=clean_env(repo),
        started=started,
    )
