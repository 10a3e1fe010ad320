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
from functools import partial
from pathlib import Path
from typing import Any

from bot.config_counts import CountConfig, check_defaults, read_counts, read_timezone
from bot.config_platforms import (
    ENV_NAME,
    DiscordConfig,
    ServerConfig,
    SlackConfig,
    discord,
    server,
    slack,
)
from bot.config_reader import Problems, describe
from bot.config_reader import Reader as _Reader
from bot.errors import ConfigError
from bot.store.engine import url_problem
from bot.subscription import ChannelRef, Platform

__all__ = ["Admins", "Config", "CountConfig", "DiscordConfig", "ServerConfig", "SlackConfig"]

DEFAULT_STORE = "sqlite+aiosqlite:///var/tallybot.sqlite3"


@dataclass(frozen=True, slots=True)
class Admins:
    """Who may run admin commands, per platform, and where admin notices go.

    The configured user ids are admins everywhere. A platform's own rights (Discord: Manage
    Server or Administrator; Slack: workspace admin or owner) and Discord role names confer
    admin only inside the servers and workspaces listed here (``discord_guilds``,
    ``slack_workspaces``): counts have no owners yet, so the owner of any other server the bot
    is in would otherwise command every count.
    """

    discord_users: frozenset[str] = frozenset()
    discord_roles: frozenset[str] = frozenset()
    discord_guilds: frozenset[str] = frozenset()
    """Guild ids where Manage Server, Administrator and ``discord_roles`` make an admin."""
    slack_users: frozenset[str] = frozenset()
    slack_workspace_admins: bool = True
    slack_workspaces: frozenset[str] = frozenset()
    """Team ids where (with ``slack_workspace_admins``) workspace admins and owners are admins."""
    console: bool = True
    alerts: tuple[ChannelRef, ...] = ()


@dataclass(frozen=True, slots=True)
class Config:
    path: Path
    store_url: str
    counts: tuple[CountConfig, ...]
    admins: Admins = field(default_factory=Admins)
    discord: DiscordConfig | None = None
    slack: SlackConfig | None = None
    console: bool = False
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


def load(path: Path, problems: Problems | None = None) -> Config:
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
    return parse(raw, path, problems)


def parse(raw: Mapping[str, Any], path: Path, problems: Problems | None = None) -> Config:
    """Check a parsed document; every problem is reported, in one ConfigError (or recorded in
    ``problems``, and the configuration returned as far as it could be read)."""
    collect = problems is None
    problems = Problems(path) if problems is None else problems
    top = _Reader(
        path,
        "",
        raw,
        ["store", "defaults", "admins", "discord", "slack", "console", "server", "counts"],
        problems,
    )
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
        admins=problems.attempt(lambda: _admins(top), Admins()),
        discord=problems.attempt(lambda: discord(top), None) if "discord" in raw else None,
        slack=problems.attempt(lambda: slack(top), None) if "slack" in raw else None,
        console=bool(top.table_at("console", ["enabled"]).get("enabled", bool, False)),
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


def _channel_ref(path: Path, where: str, text: object) -> ChannelRef:
    try:
        if not isinstance(text, str):
            raise ValueError(text)
        platform_name, rest = text.split(":", 1)
        workspace, channel = rest.split("/", 1)
        return ChannelRef(Platform(platform_name), workspace, channel)
    except ValueError:
        raise ConfigError(
            f"{path}: {where}: {describe(text)} should look like 'discord:GUILD_ID/CHANNEL_ID', "
            "'slack:TEAM_ID/CHANNEL_ID' or 'console:local/console'"
        ) from None


def _admins(top: _Reader) -> Admins:
    r = top.table_at(
        "admins",
        ["discord_users", "discord_roles", "discord_guilds", "slack_users",
         "slack_workspace_admins", "slack_workspaces", "console", "alerts"],
    )  # fmt: skip

    def ids(key: str) -> frozenset[str]:
        return frozenset(str(v) for v in r.get(key, list, []))

    alerts = tuple(
        ref
        for i, a in enumerate(r.get("alerts", list, []))
        if (
            ref := r.problems.attempt(
                partial(_channel_ref, top.path, f"admins.alerts[{i}]", a), None
            )
        )
        is not None
    )
    guilds = ids("discord_guilds")
    for guild in sorted(guilds):
        if not guild.isascii() or not guild.isdigit():
            raise r.error("discord_guilds", f"{guild!r} is not a Discord server (guild) id")
    return Admins(
        discord_users=ids("discord_users"),
        discord_roles=ids("discord_roles"),
        discord_guilds=guilds,
        slack_users=ids("slack_users"),
        slack_workspace_admins=r.get("slack_workspace_admins", bool, True),
        slack_workspaces=ids("slack_workspaces"),
        console=r.get("console", bool, True),
        alerts=tuple(alerts),
    )
