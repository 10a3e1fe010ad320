"""Which adapters a configuration turns on, and how each is built."""

from __future__ import annotations

from bot.app import AdapterFactory
from bot.config import Config
from bot.subscription import Platform


def adapter_factories(cfg: Config) -> dict[Platform, AdapterFactory]:
    factories: dict[Platform, AdapterFactory] = {}
    if cfg.console:
        from adapters.console import ConsoleAdapter

        factories[Platform.CONSOLE] = lambda commands: ConsoleAdapter(zone=cfg.timezone)
    if cfg.slack is not None:
        from adapters.slack import SlackAdapter
        from bot.secrets import require, secret

        slack = cfg.slack
        bot_token = require("SLACK_BOT_TOKEN")
        socket = slack.mode == "socket"
        app_token = require("SLACK_APP_TOKEN") if socket else secret("SLACK_APP_TOKEN")
        signing = secret("SLACK_SIGNING_SECRET") if socket else require("SLACK_SIGNING_SECRET")
        factories[Platform.SLACK] = lambda commands: SlackAdapter(
            commands,
            slack,
            bot_token=bot_token,
            app_token=app_token,
            signing_secret=signing,
            admins=cfg.admins,
            serve_http=cfg.server is None,  # else the ops server mounts its endpoint
        )
    if cfg.discord is not None:
        from adapters.discord import DiscordAdapter
        from bot.secrets import require as require_secret

        discord_cfg = cfg.discord
        discord_token = require_secret("DISCORD_TOKEN")
        factories[Platform.DISCORD] = lambda commands: DiscordAdapter(
            commands, discord_cfg, token=discord_token, admins=cfg.admins
        )
    return factories
