"""Which adapters a configuration turns on, and how each is built."""

from __future__ import annotations

from bot.app import AdapterFactory
from bot.config import Config
from bot.subscription import Platform


def adapter_factories(cfg: Config) -> dict[Platform, AdapterFactory]:
    factories: dict[Platform, AdapterFactory] = {}
    if cfg.console:
        from adapters.console import ConsoleAdapter

        factories[Platform.CONSOLE] = lambda commands: ConsoleAdapter()
    return factories
