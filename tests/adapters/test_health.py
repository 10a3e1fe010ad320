"""``health()`` tells the truth: /readyz's ``adapter:<platform>`` turns red while the Discord
gateway or the Slack socket is down (the fakes refuse every connection until revived), with the
reason; Discord's green again once discord.py has reconnected by itself (slack_sdk retries
only every ten seconds or so: not waited for here)."""

from __future__ import annotations

from pathlib import Path

from bot.ops import readiness
from bot.testing.fakes.slack_fake import FakeSlack
from tests.adapters import test_discord as discord_tests
from tests.adapters import test_slack as slack_tests
from tests.adapters.test_discord import World
from tests.adapters.test_discord import vt as vt
from tests.adapters.test_discord import world as world


async def adapter_problem(app: object, platform: str) -> str | None:
    result = await readiness.check(app)  # type: ignore[arg-type]
    (check,) = [c for c in result.checks if c.name == f"adapter:{platform}"]
    return check.problem


async def test_discord_health_is_red_while_the_gateway_is_down(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with discord_tests.running(world, discord_tests.config(tmp_path, world)) as bot:
        assert (await bot.adapter.health()).connected
        assert await adapter_problem(bot.app, "discord") is None

        await fake.kill_gateway()
        await fake.wait_for(lambda: fake.gateway.refused >= 1, timeout=10)
        health = await bot.adapter.health()
        assert not health.connected
        assert health.reason == "the Discord gateway is disconnected (reconnecting)"
        assert await adapter_problem(bot.app, "discord") == health.reason

        fake.revive_gateway()  # discord.py reconnects (and RESUMEs) after its backoff
        await fake.wait_for(lambda: fake.gateway.resume_count >= 1, timeout=10)
        await fake.gateway.flush()
        assert await adapter_problem(bot.app, "discord") is None


async def test_slack_health_is_red_while_the_socket_is_down(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        async with slack_tests.running(fake, slack_tests.config(tmp_path, fake)) as bot:
            assert (await bot.adapter.health()).connected
            assert await adapter_problem(bot.app, "slack") is None

            await fake.kill_socket()
            await fake.wait_for(lambda: fake.refused_socket_connects >= 1, timeout=10)
            health = await bot.adapter.health()
            assert not health.connected
            assert health.reason == "the Slack Socket Mode connection is down (reconnecting)"
            assert await adapter_problem(bot.app, "slack") == health.reason

        # Closed, the adapter says so too.
        closed = await bot.adapter.health()
        assert (closed.connected, closed.reason) == (
            False,
            "the Slack Socket Mode connection is closed",
        )


async def test_slack_in_http_mode_has_no_connection_to_lose(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        cfg = slack_tests.config(tmp_path, fake, mode="http")
        async with slack_tests.running(fake, cfg) as bot:
            assert (await bot.adapter.health()).connected
