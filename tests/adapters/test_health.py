"""``health()`` of what only one platform has (the contract's ``test_health_tells_the_truth``
checks every adapter going down and, where the client comes back by itself, up again)."""

from __future__ import annotations

from pathlib import Path

from bot.ops import readiness
from tests.adapters import test_slack as slack_tests
from tests.fakes.slack_fake import FakeSlack


async def test_slack_in_http_mode_has_no_connection_to_lose(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        cfg = slack_tests.config(tmp_path, fake, mode="http")
        async with slack_tests.running(fake, cfg) as bot:
            assert (await bot.adapter.health()).connected
            result = await readiness.check(bot.app)
            (check,) = [c for c in result.checks if c.name == "adapter:slack"]
            assert check.problem is None


async def test_a_closed_slack_adapter_says_so(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        async with slack_tests.running(fake, slack_tests.config(tmp_path, fake)) as bot:
            assert (await bot.adapter.health()).connected
        closed = await bot.adapter.health()
    assert (closed.connected, closed.reason) == (
        False,
        "the Slack Socket Mode connection is closed",
    )
