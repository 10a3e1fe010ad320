"""Which platforms a configuration turns on, their secrets, and how each adapter is built.

Every platform goes the same way (``bot.platform``): its plug-in read its table into
``Config.platforms``; here its secrets are read (:func:`platform_secrets`), its admin policy is
built from its settings, and ``plugin.build(settings, context)`` makes the adapter when the app
starts (:func:`adapter_factories`).

The console is a terminal: without one on standard input (a container, a service manager,
``</dev/null``) a platform that needs one stays off and one log line says so; the bot serves the
other platforms and the ops server all the same.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.commands.handler import Commands
from bot.domain.subscription import Platform
from bot.errors import ConfigError
from bot.platform import Context
from bot.runtime.app import AdapterFactory
from bot.settings.loader import Config
from bot.settings.problems import Problems
from bot.settings.secrets import Secret, require, secret

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Secrets:
    """The secrets a configuration needs, read once (see :func:`platform_secrets`)."""

    platforms: Mapping[Platform, Mapping[str, Secret]] = field(default_factory=dict)
    """Each enabled platform's secrets that are set, by name."""
    push_secret: Secret | None = None
    store_password: Secret | None = None


def platform_secrets(cfg: Config, env: Mapping[str, str] | None = None) -> Secrets:
    """Every secret ``cfg`` needs, or one ConfigError naming every missing or unusable one.

    Each enabled platform says which it needs (``Plugin.secrets``). The push secret is optional
    (push answers 503 without it), but refused when set and too short.
    """
    problems = Problems(cfg.path)

    def read(name: str, needed: bool, table: str) -> Secret | None:
        try:
            return require(name, env) if needed else secret(name, env)
        except ConfigError as exc:
            problems.add(f"{cfg.path}: {table}: {exc}")
            return None

    platforms: dict[Platform, dict[str, Secret]] = {}
    for platform, settings in cfg.platforms.items():
        found = platforms[platform] = {}
        for need in cfg.plugins[platform].secrets(settings):
            value = read(need.name, need.required, platform)
            if value is not None:
                found[need.name] = value
    server = cfg.server
    result = Secrets(
        platforms=platforms,
        push_secret=(
            read(server.push_secret_env, False, "server.push_secret_env") if server else None
        ),
        store_password=(
            read(cfg.store_password_env, True, "store.password_env")
            if cfg.store_password_env
            else None
        ),
    )
    problems.raise_any()
    return result


def context(
    cfg: Config,
    platform: Platform,
    commands: Commands,
    secrets: Mapping[str, Secret] | None = None,
) -> Context:
    """What ``platform``'s adapter is built with: the core's handler, its admin policy (from
    its settings; deny unless its plug-in has one) and its secrets."""
    plugin = cfg.plugins[platform]
    return Context(
        handle=commands.handle,
        clock=commands.clock,
        throttle=commands.throttle,
        admins=plugin.admins(cfg.platforms[platform]),
        place=plugin.place,
        secrets=dict(secrets or {}),
        store=commands.db,
        zone=cfg.timezone,
        ops_server=cfg.server is not None,
        verbs=commands.verbs,
        instance=commands.instance,
        backlog=commands.backlog,
        shard_lease_seconds=cfg.cluster.shard_lease_seconds,
    )


def adapter_factories(
    cfg: Config, *, terminal: bool = True, env: Mapping[str, str] | None = None
) -> dict[Platform, AdapterFactory]:
    """The adapters ``cfg`` enables; ``terminal``: whether standard input is a terminal."""
    secrets = platform_secrets(cfg, env)
    factories: dict[Platform, AdapterFactory] = {}
    for platform, settings in cfg.platforms.items():
        plugin = cfg.plugins[platform]
        if plugin.needs_terminal and not terminal:
            log.info("%s adapter off: standard input is not a terminal", platform)
            continue
        factories[platform] = _factory(cfg, platform, settings, secrets.platforms[platform])
    return factories


def _factory(
    cfg: Config, platform: Platform, settings: object, secrets: Mapping[str, Secret]
) -> AdapterFactory:
    build = cfg.plugins[platform].build
    return lambda commands: build(settings, context(cfg, platform, commands, secrets))
