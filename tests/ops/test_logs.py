"""Structured logs: JSON lines off a terminal, readable lines on one, delivery context on every
delivery line, and no configured secret in any line of a whole run."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.commands.request import Request
from bot.delivery.adapter import Earlier
from bot.delivery.pacing import Pace, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import TransientDeliveryError
from bot.ingest.poller import PollResult
from bot.runtime import logs
from bot.runtime.app import App
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.ops.conftest import CHAN, MANUAL, POLLED, SECRET, Bot, Feed, no_sleep, ops_config

SECRETS = {
    "DISCORD_TOKEN": "MTA4OTk0.discord-token-9f8e7d",
    "SLACK_BOT_TOKEN": "xoxb-1111-2222-slackbottoken",
    "SLACK_APP_TOKEN": "xapp-1-A111-slackapptoken",
    "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
    "FEED_TOKEN": "Bearer feed-token-0c9b8a",
}


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def emit(stream: io.StringIO, *, secrets: tuple[str, ...] = (), **kw: Any) -> str:
    with logs.configured(stream=stream, secrets=secrets, **kw):
        logging.getLogger("bot.delivery.worker").warning(
            "delivery failed: %s",
            "503",
            extra={"count": POLLED, "platform": "discord", "channel": "81/92"},
        )
    return stream.getvalue()


def test_json_lines_off_a_terminal_and_readable_lines_on_one() -> None:
    line = json.loads(emit(io.StringIO()))
    assert line["level"] == "warning"
    assert line["logger"] == "bot.delivery.worker"
    assert line["msg"] == "delivery failed: 503"
    assert (line["count"], line["platform"], line["channel"]) == (POLLED, "discord", "81/92")
    assert line["ts"].endswith("Z")
    text = emit(TTY())
    assert " WARNING bot.delivery.worker: delivery failed: 503  " in text
    assert text.rstrip().endswith("count=bessemer-2021 platform=discord channel=81/92")


def test_setup_is_undone_and_levels_restored() -> None:
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    with logs.configured(stream=io.StringIO(), level=logging.DEBUG):
        assert root.level == logging.DEBUG
        assert logging.getLogger("apscheduler").getEffectiveLevel() == logging.WARNING
    assert (list(root.handlers), root.level) == before


def test_the_filter_scrubs_message_arguments_tracebacks_and_extras() -> None:
    stream = io.StringIO()
    token = "sekrit-token-123"
    with logs.configured(stream=stream, secrets=[token, "short"]):
        log = logging.getLogger("bot.test")
        log.info("token %s in args", token, extra={"header": f"Bearer {token}", "n": 3})
        log.info(f"token {token} in the message")
        try:
            raise RuntimeError(f"failed with {token}")
        except RuntimeError:
            log.exception("it broke")
    text = stream.getvalue()
    assert token not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["msg"] == "token *** in args"
    assert lines[0]["header"] == "Bearer ***"
    assert lines[0]["n"] == 3
    assert lines[1]["msg"] == "token *** in the message"
    assert "RuntimeError: failed with ***" in lines[2]["exc"]


class LeakyAdapter(RecordingAdapter):
    """Fails its first post with an error that quotes the Discord token, as a careless library
    might."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self.failed_once = False

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        if not self.failed_once:
            self.failed_once = True
            raise TransientDeliveryError(f"401 Unauthorized for Bot {self.token}")
        return await super().post(
            channel, content, key=key, pace=pace, attachment=attachment, earlier=earlier
        )


async def test_no_secret_in_the_logs_of_a_whole_run(
    feed: tuple[Feed, str], tmp_path: Path, push_secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    f, url = feed
    cfg = ops_config(url, tmp_path, headers_from_env={"Authorization": "FEED_TOKEN"})
    scrubbed = logs.secret_values(cfg)
    assert sorted(scrubbed) == sorted([*SECRETS.values(), SECRET])
    stream = io.StringIO()
    adapter = LeakyAdapter(SECRETS["DISCORD_TOKEN"])
    clock = FakeClock()
    with logs.configured(stream=stream, secrets=scrubbed, json_lines=True):
        app = App(
            cfg,
            {Platform("console"): lambda commands: adapter},
            clock=clock,
            sleep=no_sleep,
            poll=False,
        )
        async with app, aiohttp.ClientSession() as http:
            await app.commands.handle(Request(CHAN, "u", "u", f"subscribe {POLLED} all", home=True))
            bot = Bot(app, adapter, clock, f, url, http)
            assert await app.pollers[POLLED].poll() is PollResult.ACCEPTED
            await app.idle()  # the post fails, quoting the token, and waits for its retry
            f.status, f.echo_auth = 401, True  # the feed now quotes our Authorization header
            assert await app.pollers[POLLED].poll() is PollResult.FAILED
            assert await app.pollers[POLLED].poll() is PollResult.FAILED  # now stale
            status, _ = await bot.push(MANUAL, {"votes": {"ana": 1, "ben": 2, "cho": 3}})
            assert status == 201
            status, body = await bot.push(MANUAL, {"votes": {}, SECRET: 1})
            assert status == 422  # the error names the field: the push secret itself
            assert SECRET in body["error"]
            assert (await bot.push(MANUAL, b"{}", secret=SECRETS["SLACK_SIGNING_SECRET"]))[0] == 401
            f.status, f.echo_auth = 200, False
            await app.pollers[POLLED].poll()
            clock.advance(600)
            await app.idle()
    text = stream.getvalue()
    for name, value in [*SECRETS.items(), ("TALLYBOT_PUSH_SECRET", SECRET)]:
        assert value not in text, f"{name} leaked into the logs"
        assert value.split()[-1] not in text, f"part of {name} leaked into the logs"
    lines = [json.loads(line) for line in text.splitlines()]
    messages = [line["msg"] for line in lines]
    assert any(
        m.startswith("delivery failed (attempt 1)") and m.endswith("401 Unauthorized for Bot ***")
        for m in messages
    )
    assert any("HTTP 401 Denied for ***" in m for m in messages)
    assert any("unknown field '***'" in m for m in messages)
    deliveries = [line for line in lines if line["logger"] == "bot.delivery.worker"]
    assert len(deliveries) >= 2  # a retry, the notices (each post of a fan-out is debug)
    for line in deliveries:
        assert {"count", "platform", "channel"} <= line.keys(), line
        assert line["platform"] == "console"
    fanouts = [line for line in lines if line["logger"] == "bot.delivery.worker.fanout"]
    assert len(fanouts) >= 1  # one line per update delivered
    for line in fanouts:
        assert {"count", "platform"} <= line.keys(), line
    for line in lines:
        if line["logger"] == "bot.ingest.poller":
            assert line["count"] == POLLED


def test_only_whole_tokens_are_scrubbed_and_short_secrets_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scrub = logs.SecretFilter(["xt-run-token-0a1b2c3d", "abc"]).scrub
    assert scrub("the next run uses xt-run-token-0a1b2c3d now") == "the next run uses *** now"
    assert scrub("token=xt-run-token-0a1b2c3d&x=1") == "token=***&x=1"
    assert scrub("Bearer xt-run-token-0a1b2c3d") == "Bearer ***"
    assert (
        scrub("abcdef and xt-run-token-0a1b2c3dz stay") == "abcdef and xt-run-token-0a1b2c3dz stay"
    )
    from bot.errors import ConfigError
    from bot.settings.secrets import MIN_LENGTH, secret

    monkeypatch.setenv("DISCORD_TOKEN", "next")
    with pytest.raises(ConfigError, match="DISCORD_TOKEN: only 4 characters: too short"):
        secret("DISCORD_TOKEN")
    monkeypatch.setenv("DISCORD_TOKEN", "x" * MIN_LENGTH)
    assert secret("DISCORD_TOKEN") is not None
    monkeypatch.setenv("DISCORD_TOKEN", "next")
    assert "next" not in logs.secret_values()  # unusable: refused at start, never scrubbed


async def test_a_source_that_stays_down_logs_its_changes_of_state_only(
    bot: Bot, caplog: pytest.LogCaptureFixture
) -> None:
    bot.feed.status = 503
    poller = bot.app.pollers[POLLED]
    with caplog.at_level(logging.DEBUG, logger="bot.ingest.poller"):
        for _ in range(8):
            assert await poller.poll() is PollResult.FAILED
        bot.feed.status = 200
        assert await poller.poll() is PollResult.ACCEPTED
    above_debug = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno > 10]
    assert [level for level, _ in above_debug] == ["WARNING", "ERROR", "INFO"]
    assert above_debug[1][1].startswith("source is stale after 2 failed polls")
    assert above_debug[2][1] == "source recovered"
    assert sum(r.levelno == logging.DEBUG for r in caplog.records if "again" in r.msg) == 6
