"""Which adapters a configuration turns on, and how each is built.

The console is a terminal: without one on standard input (a container, a service manager,
``</dev/null``) it stays off and one log line says so; the bot serves the other platforms and the
ops server all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from bot.app import AdapterFactory
from bot.config import Config
from bot.delivery.pacing import Window
from bot.secrets import platform_secrets
from bot.subscription import Platform

log = logging.getLogger(__name__)


def windows(configured: Iterable[tuple[str, int, float]]) -> dict[str, Window]:
    """A ``limits`` table of the configuration, by bucket name."""
    return {name: Window(n, seconds) for name, n, seconds in configured}


def adapter_factories(
    cfg: Config, *, terminal: bool = True, env: Mapping[str, str] | None = None
) -> dict[Platform, AdapterFactory]:
    """The adapters ``cfg`` enables; ``terminal``: whether standard input is a terminal."""
    secrets = platform_secrets(cfg, env)
    factories: dict[Platform, AdapterFactory] = {}
    if cfg.console and not terminal:
        log.info("console adapter off: standard input is not a terminal")
    elif cfg.console:
        from adapters.console import ConsoleAdapter

        factories[Platform.CONSOLE] = lambda commands: ConsoleAdapter(zone=cfg.timezone)
    if cfg.slack is not None:
        from adapters.slack import SlackAdapter
        from adapters.slack_delivery import SLACK_LIMITS

        slack = cfg.slack
        assert secrets.slack_bot_token is not None  # platform_secrets() has made sure
        bot_token = secrets.slack_bot_token
        slack_limits = SLACK_LIMITS.with_windows(windows(slack.limits))
        factories[Platform.SLACK] = lambda commands: SlackAdapter(
            commands,
            slack,
            bot_token=bot_token,
            app_token=secrets.slack_app_token,
            signing_secret=secrets.slack_signing_secret,
            admins=cfg.admins,
            http_host=slack.host,
            http_port=slack.port,
            serve_http=cfg.server is None,  # else the ops server mounts its endpoint
            limits=slack_limits,
        )
    if cfg.discord is not None:
        from adapters.discord import DiscordAdapter
        from adapters.discord_delivery import DISCORD_LIMITS

        discord_cfg = cfg.discord
        assert secrets.discord_token is not None
        discord_token = secrets.discord_token
        discord_limits = DISCORD_LIMITS.with_windows(windows(discord_cfg.limits))
        factories[Platform.DISCORD] = lambda commands: DiscordAdapter(
            commands, discord_cfg, token=discord_token, admins=cfg.admins, limits=discord_limits
        )
    return factories
