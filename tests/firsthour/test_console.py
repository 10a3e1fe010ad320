"""The console at a terminal (a pty): a visible prompt, commands with Tab completion and
history, output above the prompt, and Ctrl-C or ``quit`` stops the bot within 5 s."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import selectors
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.firsthour.conftest import STOP_WITHIN, clean_env, example_for_tests

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@dataclass
class Terminal:
    proc: subprocess.Popen[bytes]
    master: int
    screen: bytes = b""
    seen: int = 0
    """How much of the text ``expect`` has looked at: each looks further on only."""

    def text(self) -> str:
        return ANSI.sub(b"", self.screen).decode(errors="replace")

    def expect(self, pattern: str, within: float = 30.0) -> None:
        """Read the terminal until ``pattern`` shows after what the last ``expect`` saw (at the
        process's pace, bounded by ``within``)."""
        deadline = time.monotonic() + within
        with selectors.DefaultSelector() as sel:
            sel.register(self.master, selectors.EVENT_READ)
            while (at := self.text().find(pattern, self.seen)) < 0:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise AssertionError(f"no {pattern!r} on the terminal:\n{self.text()}")
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:  # the process is gone
                    raise AssertionError(f"no {pattern!r}:\n{self.text()}") from None
        self.seen = at + len(pattern)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self) -> float:
        started = time.monotonic()
        self.proc.wait(timeout=STOP_WITHIN + 5)
        return time.monotonic() - started


def controlling_terminal() -> None:
    """In the child: a session of its own, with the pty on stdin as its terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.fixture
def terminal(fresh_repo: Path, tmp_path: Path) -> Iterator[Terminal]:
    config = example_for_tests(fresh_repo, tmp_path / "site")
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        cwd=config.parent,
        # A pty answers no cursor position requests (a terminal emulator would).
        env=clean_env(fresh_repo, TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1"),
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        preexec_fn=controlling_terminal,  # as in a shell: Ctrl-C outside the prompt is SIGINT
    )
    os.close(slave)
    term = Terminal(proc, master)
    try:
        yield term
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        os.close(master)


def test_ctrl_c_at_the_prompt_stops_the_bot_within_5_s(terminal: Terminal) -> None:
    terminal.expect("tallybot>")
    terminal.expect("Type a command (help lists them; Tab completes), quit or Ctrl-D to stop.")
    terminal.type("status\r")
    terminal.expect("board-2026 [counting]: no figures yet")
    terminal.type("hist\t")  # Tab completes the command...
    terminal.expect("history")
    terminal.type(" boa\t")  # ...and the count id
    terminal.expect("board-2026")
    terminal.type("\r")
    terminal.expect("board-2026: no figures yet.")
    terminal.type("\x1b[A\x1b[A\r")  # up, up: the status typed first, again
    terminal.expect("For one count's figures")
    assert terminal.text().count("For one count's figures") == 2
    terminal.expect("tallybot>")  # the prompt is back, waiting
    terminal.type("\x03")  # Ctrl-C
    took = terminal.wait()
    assert took < STOP_WITHIN
    assert terminal.proc.returncode == 0


def test_quit_stops_the_bot(terminal: Terminal) -> None:
    terminal.expect("tallybot>")
    terminal.type("quit\r")
    assert terminal.wait() < STOP_WITHIN
    assert terminal.proc.returncode == 0


def test_console_output_wraps_at_80_columns_and_keeps_the_whole_footer() -> None:
    import io
    from dataclasses import replace
    from datetime import UTC

    from adapters.console.adapter import ConsoleAdapter
    from bot.domain import format as fmt
    from bot.domain.message import Timed
    from tests.helpers import bessemer, tally

    message = fmt.for_status(bessemer(), tally(463, 1100, challenged=505, seq=3))
    footer = Timed.of(*message.footer.parts, " · " + ("a very long source name " * 4).strip())
    out = io.StringIO()
    ConsoleAdapter(out=out, rich=True, zone=UTC).show(replace(message, footer=footer))
    plain = ANSI.sub(b"", out.getvalue().encode()).decode()
    lines = plain.splitlines()
    assert max(len(line) for line in lines) <= 80
    words = " ".join(line.strip(" │╭╮╰╯─") for line in lines)
    assert " ".join(str(footer).split()) in " ".join(words.split())
