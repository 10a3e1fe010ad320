"""Configuration: one TOML file, checked whole before anything starts.

Every problem is reported as ``FILE: KEY: PROBLEM``, all of them at once (one ``ConfigError``
whose ``problems`` lists them; see ``bot.config_reader``). The counts and their defaults are
read by ``bot.config_counts``, the platforms and the ops server by ``bot.config_platforms``. Secrets
never live in the file: they come from the environment (see ``bot.secrets``).
``config/example.toml`` documents every key.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any

from bot.config_counts import CountConfig, check_defaults, read_counts, read_timezone
from bot.config_platforms import ENV_NAME, Admins, ServerConfig, admins, platforms, server
from bot.config_reader import Problems
from bot.config_reader import Reader as _Reader
from bot.errors import ConfigError
from bot.platform import Plugins
from bot.store.engine import url_problem
from bot.subscription import Platform

__all__ = ["Admins", "Config", "CountConfig", "ServerConfig"]
CORE_TABLES = ("store", "defaults", "admins", "server", "counts")
"""The tables of the core; every other top-level table is a platform's (``bot.platform``)."""

DEFAULT_STORE = "sqlite+aiosqlite:///var/tallybot.sqlite3"


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    store_url: str
    counts: tuple[CountConfig, ...]
    admins: Admins = field(default_factory=Admins)
    platforms: Mapping[Platform, Any] = field(default_factory=dict)
    """The settings of every enabled platform, as its plug-in read them from its table."""
    plugins: Plugins = field(default_factory=lambda: Plugins(()))
    """The plug-ins the file was read with (the installed ones, unless given)."""
    server: ServerConfig | None = None
    timezone: tzinfo | None = None
    """``[defaults] timezone``: where times are shown that cannot be shown in each reader's own
    zone (the console); None for the machine's own zone."""
    store_password_env: str | None = None
    """The variable (or ``NAME_FILE``) holding the store's database password, if it needs one."""

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
    collect = problems is None
    problems = Problems(path) if problems is None else problems
    plugins = Plugins.installed() if plugins is None else plugins
    # A table that is neither the core's nor an installed platform's: "unknown key (did you
    # mean 'discord'?)", or the list of every known table.
    top = _Reader(path, "", raw, [*CORE_TABLES, *plugins], problems)
    store = top.table_at("store", ["url", "password_env"])
    store_url = problems.attempt(lambda: _store_url(store), DEFAULT_STORE)
    password_env = problems.attempt(lambda: _env_name(store, "password_env"), None)
    defaults = top.table_at(
        "defaults", ["interval", "stale_after_failures", "stale_after_minutes", "timezone"]
    )
    check_defaults(defaults)
    counts = read_counts(top, defaults)
    config = Config(
        path=path,
        store_url=store_url,
        counts=counts,
        admins=problems.attempt(lambda: admins(top, plugins), Admins()),
        platforms=platforms(top, plugins),
        plugins=plugins,
        server=problems.attempt(lambda: server(top), None) if "server" in raw else None,
        store_password_env=password_env,
        timezone=problems.attempt(lambda: read_timezone(defaults), None),
    )
    if collect:
        problems.raise_any()
    return config


def _store_url(store: _Reader) -> str:
    url: str = store.get("url", str, DEFAULT_STORE)
    problem = url_problem(url)
    if problem is not None:
        raise store.error("url", problem)
    return url


def _env_name(r: _Reader, key: str) -> str | None:
    name: str | None = r.get(key, str)
    if name is not None and not ENV_NAME.fullmatch(name):
        raise r.error(key, f"{name!r} is not an environment variable name")
    return name
