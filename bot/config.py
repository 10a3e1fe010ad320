"""Configuration: one TOML file, checked whole before anything starts.

Every problem is reported as ``FILE: KEY: PROBLEM``, all of them at once (one ``ConfigError``
whose ``problems`` lists them; see ``bot.config_reader``). Secrets never live in
the file: they come from the environment (see ``bot.secrets``). ``config/example.toml``
documents every key.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import tzinfo
from enum import Enum
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bot.config_platforms import (
    ENV_NAME,
    DiscordConfig,
    ServerConfig,
    SlackConfig,
    discord,
    server,
    slack,
)
from bot.config_reader import Problems, Recorded, describe, suggest
from bot.config_reader import Reader as _Reader
from bot.domain.model import (
    CEILING_RULE,
    MAX_FIGURE,
    SLUG,
    Choice,
    Count,
    CountStatus,
    DecisionRule,
    RuleKind,
)
from bot.domain.times import zone_named
from bot.errors import ConfigError
from bot.store.engine import url_problem
from bot.subscription import ChannelRef, Platform

E = TypeVar("E", bound=Enum)
__all__ = ["Admins", "Config", "CountConfig", "DiscordConfig", "ServerConfig", "SlackConfig"]

DEFAULT_STORE = "sqlite+aiosqlite:///var/tallybot.sqlite3"
MIN_INTERVAL = 1.0
MAX_INTERVAL = 86_400.0
DEFAULT_INTERVAL = 15.0
MANUAL: Mapping[str, Any] = {"kind": "manual"}
MAX_STALE_MINUTES = 10_080
"""A week: a source silent for longer than that is stale whatever the setting."""


@dataclass(frozen=True, slots=True)
class CountConfig:
    count: Count
    source: Mapping[str, Any]
    interval: float = DEFAULT_INTERVAL
    stale_after_failures: int = 5
    stale_after_seconds: float = 600.0


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
    _check_defaults(defaults)
    counts = _counts(top, defaults)
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
        timezone=problems.attempt(lambda: _timezone(defaults), None),
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


def _check_defaults(defaults: _Reader) -> None:
    """Report ``[defaults]`` problems once, before the counts that use them (a count whose only
    problem is a default is still read, with the built-in default)."""
    none = _Reader(defaults.path, "", {}, [], defaults.problems)
    for check in (_interval, _failures, _stale_seconds):
        defaults.problems.attempt(partial(check, none, defaults), None)


def _counts(top: _Reader, defaults: _Reader) -> tuple[CountConfig, ...]:
    counts: list[CountConfig] = []
    for i, raw in enumerate(top.get("counts", list, [])):
        cc = top.problems.attempt(partial(_count, top.path, i, raw, defaults), None)
        if cc is not None:
            counts.append(cc)
    seen: set[str] = set()
    for i, cc in enumerate(counts):
        if cc.count.id in seen:
            top.problems.add(f"{top.path}: counts[{i}].id: {cc.count.id!r} is used twice")
        seen.add(cc.count.id)
    return tuple(counts)


def _timezone(defaults: _Reader) -> tzinfo | None:
    name = defaults.get("timezone", str)
    if name is None:
        return None
    try:
        return zone_named(name)
    except ValueError as exc:
        raise defaults.error("timezone", str(exc)) from None


def _count(path: Path, i: int, raw: Any, defaults: _Reader) -> CountConfig:
    where = f"counts[{i}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected a table, got {describe(raw)}")
    p = defaults.problems
    before = len(p.items)
    r = _Reader(
        path,
        where,
        raw,
        [
            "id", "title", "choices", "rule", "tie_holder", "threshold", "eligible", "received",
            "status", "interval", "stale_after_failures", "stale_after_minutes", "source",
        ],
        p,
    )  # fmt: skip
    count_id = p.attempt(lambda: _count_id(r), "")
    title: str = p.attempt(lambda: r.need("title", str), "")
    choices: list[Choice] = p.attempt(lambda: _choices(r), [])
    kind = p.attempt(lambda: _enum(r, "rule", RuleKind, RuleKind.MAJORITY), RuleKind.MAJORITY)
    threshold = p.attempt(lambda: _threshold(r), None)
    status = p.attempt(
        lambda: _enum(r, "status", CountStatus, CountStatus.COUNTING), CountStatus.COUNTING
    )
    tie_holder, eligible, received = (
        r.get("tie_holder", str),
        p.attempt(lambda: _figure(r, "eligible"), None),
        p.attempt(lambda: _figure(r, "received"), None),
    )
    if eligible is not None and received is not None and received > eligible:
        p.attempt(lambda: _over_eligible(r, received, eligible), None)
    interval = p.attempt(lambda: _interval(r, defaults), DEFAULT_INTERVAL)
    source = p.attempt(lambda: _source(r), MANUAL)
    failures = p.attempt(lambda: _failures(r, defaults), 5)
    stale_seconds = p.attempt(lambda: _stale_seconds(r, defaults), 600.0)
    if len(p.items) > before:
        raise Recorded(f"{path}: {where}: has problems")
    try:
        count = Count(
            id=count_id,
            title=title,
            choices=tuple(choices),
            rule=DecisionRule(kind, tie_holder, threshold),
            eligible=eligible,
            received=received,
            status=status,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None
    return CountConfig(count, source, interval, failures, stale_seconds)


def _count_id(r: _Reader) -> str:
    count_id: str = r.need("id", str)
    if not SLUG.match(count_id):
        raise r.error(
            "id",
            f"{describe(count_id)} is not a lowercase slug like 'bessemer-2021' "
            "(letters, digits and dashes, at most 64)",
        )
    return count_id


def _choices(r: _Reader) -> list[Choice]:
    choices = []
    for j, c in enumerate(r.need("choices", list)):
        if (
            not isinstance(c, dict)
            or set(c) - {"id", "label"}
            or not isinstance(c.get("id"), str)
            or not isinstance(c.get("label", ""), str)
        ):
            raise r.error(f"choices[{j}]", 'expected { id = "yes", label = "Yes" }')
        choices.append(Choice(c["id"], str(c.get("label", c["id"]))))
    return choices


def _enum(r: _Reader, key: str, kind: type[E], default: E) -> E:
    name = r.get(key, str, default.value)
    try:
        return kind(name)
    except ValueError:
        names = [k.value for k in kind]
        raise r.error(
            key, f"unknown {key} {describe(name)}{suggest(name, names)}; one of {', '.join(names)}"
        ) from None


def _threshold(r: _Reader) -> Fraction | None:
    if "threshold" not in r.table:
        return None
    value = r.get("threshold", (str, int, float))
    try:
        return None if value is None else Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise r.error("threshold", 'expected a fraction like "2/3"') from None


def _setting(r: _Reader, defaults: _Reader, key: str) -> tuple[_Reader, Any]:
    """The count's own ``key``, else the one in ``[defaults]``; and the table it came from."""
    at = r if key in r.table else defaults
    return at, at.get(key, (int, float))


def _interval(r: _Reader, defaults: _Reader) -> float:
    at, value = _setting(r, defaults, "interval")
    if value is None:
        return DEFAULT_INTERVAL
    if not math.isfinite(value) or not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise at.error(
            "interval", f"must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} seconds, got {value!r}"
        )
    return float(value)


def _failures(r: _Reader, defaults: _Reader) -> int:
    at, value = _setting(r, defaults, "stale_after_failures")
    if value is None:
        return 5
    if not isinstance(value, int) or value < 1:
        raise at.error(
            "stale_after_failures", f"must be a whole number of at least 1, got {value!r}"
        )
    return value


def _stale_seconds(r: _Reader, defaults: _Reader) -> float:
    at, value = _setting(r, defaults, "stale_after_minutes")
    if value is None:
        return 600.0
    if not (math.isfinite(value) and 0 < value <= MAX_STALE_MINUTES):
        raise at.error(
            "stale_after_minutes", f"must be above 0 and at most {MAX_STALE_MINUTES}, got {value!r}"
        )
    return float(value) * 60


def _source(r: _Reader) -> Mapping[str, Any]:
    source: Mapping[str, Any] = r.get("source", dict, {"kind": "manual"})
    if "kind" not in source:
        raise r.error("source.kind", "is required (http_json, http_csv, file, manual, replay)")
    return source


def _figure(r: _Reader, key: str) -> int | None:
    """A figure of the config (``eligible``, ``received``): under the one ceiling, MAX_FIGURE."""
    value: int | None = r.get(key, int)
    if value is not None and value > MAX_FIGURE:
        raise r.error(key, f"{value:,} is above the ceiling: {CEILING_RULE}")
    return value


def _over_eligible(r: _Reader, received: int, eligible: int) -> None:
    raise r.error(
        "received", f"{received:,} received is more than the {eligible:,} eligible voters"
    )


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
