"""Which adapters a configuration turns on, and how each is built."""

from __future__ import annotations

from collections.abc import Iterable

from bot.app import AdapterFactory
from bot.config import Config
from bot.pacing import Window
from bot.subscription import Platform


def windows(configured: Iterable[tuple[str, int, float]]) -> dict[str, Window]:
    """A ``limits`` table of the configuration, by bucket name."""
    return {name: Window(n, seconds) for name, n, seconds in configured}


def adapter_factories(cfg: Config) -> dict[Platform, AdapterFactory]:
    factories: dict[Platform, AdapterFactory] = {}
    if cfg.console:
        from adapters.console import ConsoleAdapter

        factories[Platform.CONSOLE] = lambda commands: ConsoleAdapter()
    if cfg.slack is not None:
        from adapters.slack import SlackAdapter
        from adapters.slack_delivery import SLACK_LIMITS
        from bot.secrets import require, secret

        slack = cfg.slack
        bot_token = require("SLACK_BOT_TOKEN")
        socket = slack.mode == "socket"
        app_token = require("SLACK_APP_TOKEN") if socket else secret("SLACK_APP_TOKEN")
        signing = secret("SLACK_SIGNING_SECRET") if socket else require("SLACK_SIGNING_SECRET")
        slack_limits = SLACK_LIMITS.with_windows(windows(slack.limits))
        factories[Platform.SLACK] = lambda commands: SlackAdapter(
            commands,
            slack,
            bot_token=bot_token,
            app_token=app_token,
            signing_secret=signing,
            admins=cfg.admins,
            serve_http=cfg.server is None,  # else the ops server mounts its endpoint
            limits=slack_limits,
        )
    if cfg.discord is not None:
        from adapters.discord import DiscordAdapter
        from adapters.discord_delivery import DISCORD_LIMITS
        from bot.secrets import require as require_secret

        discord_cfg = cfg.discord
        discord_token = require_secret("DISCORD_TOKEN")
        discord_limits = DISCORD_LIMITS.with_windows(windows(discord_cfg.limits))
        factories[Platform.DISCORD] = lambda commands: DiscordAdapter(
            commands, discord_cfg, token=discord_token, admins=cfg.admins, limits=discord_limits
        )
    return factories
