"""Configuration: one TOML file, checked whole, in one typed pass, before anything starts.

The file is checked against one pydantic model (:mod:`bot.settings`): the core's tables, every
count's ``source`` table and every platform's table, whose model its plug-in gives. Every
problem is reported as ``FILE: KEY: PROBLEM``, all of them at once and in the order of the file
(one ``ConfigError`` whose ``problems`` lists them). Secrets never live in the file: they come
from the environment (see ``bot.settings.secrets``). ``config/example.toml`` documents every key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta, tzinfo
from pathlib import Path
from typing import Any

from bot.base.egress import EgressPolicy
from bot.domain.schedule import DEFAULT_REMIND
from bot.domain.subscription import Platform
from bot.errors import ConfigError
from bot.platform import Plugins
from bot.settings.counts import CountConfig
from bot.settings.document import (
    DEFAULT_STORE,
    Admins,
    Cluster,
    Document,
    ServerConfig,
    document_model,
)
from bot.settings.document import read as read_document
from bot.settings.problems import Problems, lines
from bot.settings.web import WebConfig

__all__ = [
    "DEFAULT_STORE",
    "Admins",
    "Cluster",
    "Config",
    "CountConfig",
    "ServerConfig",
    "WebConfig",
    "load",
    "parse",
]


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    store_url: str
    counts: tuple[CountConfig, ...]
    admins: Admins = field(default_factory=Admins)
    platforms: Mapping[Platform, Any] = field(default_factory=dict)
    """The settings of every enabled platform: the model of its table, as its plug-in gives."""
    plugins: Plugins = field(default_factory=lambda: Plugins(()))
    """The plug-ins the file was read with (the installed ones, unless given)."""
    server: ServerConfig | None = None
    web: WebConfig | None = None
    """``[web]``: the public scoreboard pages (``bot.web``), when configured."""
    timezone: tzinfo | None = None
    """``[defaults] timezone``: where times are shown that cannot be shown in each reader's own
    zone (the console); None for the machine's own zone."""
    remind_before: timedelta = DEFAULT_REMIND
    """``[defaults] remind_before``: how long before a scheduled time its reminder goes."""
    store_password_env: str | None = None
    """The variable (or ``NAME_FILE``) holding the store's database password, if it needs one."""
    chat_sources: EgressPolicy = field(default_factory=EgressPolicy)
    """Where a source URL typed in chat may point (``[chat_sources]``, ``bot.base.egress``)."""
    cluster: Cluster = field(default_factory=Cluster)
    """``[cluster]``: this instance among several on one store."""

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def count(self, count_id: str) -> CountConfig | None:
        for c in self.counts:
            if c.count.id == count_id:
                return c
        return None

    def settings(self, platform: str) -> Any:
        """The settings of ``platform``, or None when it is not enabled."""
        return self.platforms.get(Platform(platform))


def load(path: Path, problems: Problems | None = None, plugins: Plugins | None = None) -> Config:
    """Read and check a configuration file: every problem in it, in one ConfigError (or, given
    ``problems``, recorded there, with the configuration as far as it could be read)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: is a directory, not a configuration file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return parse(raw, path, problems, plugins)


def parse(
    raw: Mapping[str, Any],
    path: Path,
    problems: Problems | None = None,
    plugins: Plugins | None = None,
) -> Config:
    """Check a parsed document; every problem is reported, in one ConfigError (or recorded in
    ``problems``, and the configuration returned as far as it could be read). ``plugins``: the
    platforms whose tables it may have (default: the installed ones)."""
    plugins = Plugins.installed() if plugins is None else plugins
    model = document_model(plugins)
    doc, errors = read_document(model, raw)
    if errors:
        found = lines(errors, model, raw, path)
        if problems is None:
            raise ConfigError.of(found)
        for line in found:
            problems.add(line)
    return _config(doc, path, plugins)


def _config(doc: Document, path: Path, plugins: Plugins) -> Config:
    tables = dict(doc)
    platforms = {
        plugin.platform: settings
        for name, plugin in plugins.items()
        if (settings := tables.get(name)) is not None and settings.on()
    }
    return Config(
        path=path,
        store_url=doc.store.url,
        counts=tuple(table.config(doc.defaults) for table in doc.counts),
        admins=doc.admins,
        platforms=platforms,
        plugins=plugins,
        server=doc.server,
        web=doc.web,
        timezone=doc.defaults.timezone,
        remind_before=timedelta(minutes=doc.defaults.remind_before),
        store_password_env=doc.store.password_env,
        chat_sources=doc.chat_sources.policy(),
        cluster=doc.cluster,
    )
