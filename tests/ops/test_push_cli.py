"""``tallybot push`` against a running server: the line it prints and its exit code."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.domain.subscription import Platform
from bot.errors import ConfigError
from bot.ops.push_client import PushAnswer, endpoint, figures_body
from bot.runtime.app import App
from bot.runtime.cli import main
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.ops.conftest import MANUAL, POLLED, Feed, no_sleep, ops_config


@pytest.fixture
async def server_url(
    feed: tuple[Feed, str], tmp_path: Path, push_secret: str
) -> AsyncIterator[str]:
    """A bot whose fake clock reads the real time, since the CLI signs with the real time."""
    adapter = RecordingAdapter()
    app = App(
        ops_config(feed[1], tmp_path),
        {Platform("console"): lambda commands: adapter},
        clock=FakeClock(datetime.now(UTC)),
        sleep=no_sleep,
        poll=False,
    )
    async with app:
        assert app.server is not None
        yield app.server.url


async def tallybot(*argv: str) -> int:
    """Run the CLI in a thread (it runs its own event loop), as a script would."""
    return await asyncio.to_thread(main, list(argv))


async def test_push_prints_the_result_and_exits_by_status(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["push", "--url", server_url, "--count", POLLED]
    figures = ["yes=463", "no=1,100", "challenged=505", "received=3215"]
    assert await tallybot(*base, *figures) == 0
    assert capsys.readouterr().out == (
        "accepted #1 for bessemer-2021: First results: No union leads by 637\n"
    )
    assert await tallybot(*base, *figures) == 0
    assert capsys.readouterr().out == "no change: bessemer-2021 already shows those figures (#1)\n"
    lower = ["yes=463", "no=1090", "challenged=505", "received=3215"]
    assert await tallybot(*base, *lower) == 1
    out = capsys.readouterr().out
    assert out.startswith("rejected (decrease): figures went down (no 1,100 -> 1,090)")
    assert await tallybot(*base, *lower, "--correction", "--state", "paused") == 0
    assert capsys.readouterr().out.startswith("accepted #2 for bessemer-2021: ")
    assert await tallybot(*base, "yes=1", "no=2", "maybe=3") == 3
    assert capsys.readouterr().out.startswith(
        "error 422: invalid tally: unknown choice 'maybe' for bessemer-2021"
    )
    assert await tallybot("push", "--url", server_url, "--count", "nope", "yes=1", "no=2") == 3
    assert capsys.readouterr().out.startswith("error 404: unknown count 'nope'")


async def test_push_sends_a_json_file(
    server_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    doc = tmp_path / "board.json"
    doc.write_text(json.dumps({"votes": {"ana": 12, "ben": 9, "cho": 4}}))
    assert await tallybot("push", "--url", server_url, "--count", MANUAL, "--json", str(doc)) == 0
    assert capsys.readouterr().out.startswith("accepted #1 for board-2026: ")


async def test_a_wrong_secret_is_refused(
    server_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTHER_SECRET", "not-the-push-secret")
    args = ["push", "--url", server_url, "--count", POLLED, "--secret-env", "OTHER_SECRET"]
    assert await tallybot(*args, "yes=1", "no=2") == 3
    assert capsys.readouterr().out.startswith("error 401: bad signature")


async def test_no_server_and_no_secret(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("TALLYBOT_PUSH_SECRET", "push-secret-5f0c2a9e7d")
    url = f"http://127.0.0.1:{port}"
    assert await tallybot("push", "--url", url, "--count", POLLED, "yes=1", "no=2") == 4
    assert f"POST {url}/api/counts/bessemer-2021/tally: ClientConnectorError" in (
        capsys.readouterr().err
    )
    monkeypatch.delenv("TALLYBOT_PUSH_SECRET")
    assert await tallybot("push", "--url", url, "--count", POLLED, "yes=1", "no=2") == 2
    assert "TALLYBOT_PUSH_SECRET is not set" in capsys.readouterr().err
    assert await tallybot("push", "--url", url, "--count", POLLED, "yes=one") == 2
    assert "'yes=one': figures look like yes=463 or no=1,100" in capsys.readouterr().err


def test_figures_body() -> None:
    body = figures_body(["yes=463", "no=1,100", "void=0", "received=3215"], state="paused")
    assert json.loads(body) == {
        "votes": {"yes": 463, "no": 1100},
        "void": 0,
        "received": 3215,
        "state": "paused",
    }
    assert json.loads(figures_body(["a=1"], correction=True))["correction"] is True
    sustained = json.loads(figures_body(["yes=1", "challenged=4", "sustained=2"]))
    assert (sustained["challenged"], sustained["sustained"]) == (4, 2)  # issue 24
    for words, problem in [
        (["yes=1", "yes=2"], "'yes' is given twice"),
        (["void=1"], "no votes given"),
        (["yes=1,00"], "figures look like"),
        (["yes=-1"], "figures look like"),
        (["=1"], "figures look like"),
    ]:
        with pytest.raises(ConfigError, match=problem):
            figures_body(words)


def test_answers_and_exit_codes() -> None:
    assert PushAnswer(201, {"result": "accepted"}).exit_code == 0
    assert PushAnswer(200, {"result": "no_change"}).exit_code == 0
    assert PushAnswer(409, {"result": "rejected"}).exit_code == 1
    for status in (400, 401, 404, 413, 422):
        assert PushAnswer(status, {"error": "x"}).exit_code == 3
    assert PushAnswer(503, {"error": "push ingest is off"}).exit_code == 4
    assert PushAnswer(502, {"error": "<html>"}).line() == "error 502: <html>"
    hostile = {"result": "accepted", "seq": 3, "count": "x", "headline": "\x1b[2JYes\u202e leads"}
    assert PushAnswer(201, hostile).line() == "accepted #3 for x: [2JYes leads"  # for a terminal
    assert endpoint("http://h:1/", "a b") == "http://h:1/api/counts/a%20b/tally"


async def test_push_schedules_the_count(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--resumes`` with a pause (issue 30); a time in the past is refused (exit 3)."""
    base = ["push", "--url", server_url, "--count", POLLED, "yes=463", "no=1100"]
    ahead = (datetime.now(UTC) + timedelta(hours=10)).isoformat(timespec="minutes")
    paused = ["--state", "paused", "--resumes", ahead, "--remind-before", "30"]
    assert await tallybot(*base, *paused) == 0
    assert capsys.readouterr().out.startswith("accepted #1 for bessemer-2021: ")
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="minutes")
    assert await tallybot(*base, "--state", "paused", "--resumes", past) == 3
    assert "is in the past" in capsys.readouterr().out


def test_figures_body_with_a_schedule() -> None:
    body = figures_body(["yes=1", "no=2"], schedule={"resumes": "2021-04-09T09:00-05:00"})
    assert json.loads(body)["resumes"] == "2021-04-09T09:00-05:00"
