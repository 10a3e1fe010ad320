"""Configuration: one TOML file, checked whole before anything starts.

Every problem is reported as ``FILE: KEY: PROBLEM`` (a ``ConfigError``). Secrets never live in
the file: they come from the environment (see ``bot.secrets``). ``config/example.toml``
documents every key.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from bot.errors import ConfigError
from bot.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.subscription import ChannelRef, Platform

DEFAULT_STORE = "sqlite+aiosqlite:///var/tallybot.sqlite3"
MIN_INTERVAL = 1.0
DEFAULT_INTERVAL = 15.0


@dataclass(frozen=True, slots=True)
class CountConfig:
    count: Count
    source: Mapping[str, Any]
    interval: float = DEFAULT_INTERVAL
    stale_after_failures: int = 5
    stale_after_seconds: float = 600.0


@dataclass(frozen=True, slots=True)
class Admins:
    """Who may run admin commands, per platform, and where admin notices go."""

    discord_users: frozenset[str] = frozenset()
    discord_roles: frozenset[str] = frozenset()
    slack_users: frozenset[str] = frozenset()
    slack_workspace_admins: bool = True
    console: bool = True
    alerts: tuple[ChannelRef, ...] = ()


@dataclass(frozen=True, slots=True)
class DiscordConfig:
    api_base: str = "https://discord.com/api/v10"
    gateway_url: str = "wss://gateway.discord.gg"
    guilds: tuple[int, ...] = ()
    limits: tuple[tuple[str, int, float], ...] = ()
    """``[discord.limits]``: rate-limit buckets changed by name, ``name = [requests, seconds]``
    (see ``adapters.discord_delivery.DISCORD_LIMITS``)."""


@dataclass(frozen=True, slots=True)
class SlackConfig:
    mode: str = "socket"
    api_base: str = "https://slack.com/api/"
    http_path: str = "/slack/events"
    limits: tuple[tuple[str, int, float], ...] = ()
    """``[slack.limits]``, like ``DiscordConfig.limits`` (``adapters.slack_delivery``)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The ops server: health, readiness, metrics and push ingest (see ``bot.ops.server``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    push_secret_env: str = "TALLYBOT_PUSH_SECRET"
    """The environment variable (or ``NAME_FILE``) holding the push signing secret."""
    max_body_bytes: int = 65_536
    """The largest push body accepted; a larger one is answered 413."""


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

    @property
    def base_dir(self) -> Path:
        return self.path.parent

    def count(self, count_id: str) -> CountConfig | None:
        for c in self.counts:
            if c.count.id == count_id:
                return c
        return None


class _Reader:
    """Reads one table of the TOML document and says exactly where a problem is."""

    def __init__(self, path: Path, where: str, table: Mapping[str, Any], allowed: Sequence[str]):
        self.path = path
        self.where = where
        self.table = table
        unknown = [k for k in table if k not in allowed]
        if unknown:
            key = unknown[0]
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = (
                f" (did you mean {close[0]!r}?)" if close else f"; known keys: {', '.join(allowed)}"
            )
            raise self.error(key, f"unknown key{hint}")

    def error(self, key: str, problem: str) -> ConfigError:
        where = f"{self.where}.{key}" if self.where else key
        return ConfigError(f"{self.path}: {where}: {problem}")

    def get(self, key: str, kind: type[Any] | tuple[type[Any], ...], default: Any = None) -> Any:
        if key not in self.table:
            return default
        value = self.table[key]
        if isinstance(value, bool) and kind in (int, float, (int, float)):
            raise self.error(key, f"expected a number, got {value!r}")
        if not isinstance(value, kind):
            name = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise self.error(key, f"expected {name}, got {value!r}")
        return value

    def need(self, key: str, kind: type[Any] | tuple[type[Any], ...]) -> Any:
        if key not in self.table:
            raise self.error(key, "is required")
        return self.get(key, kind)

    def table_at(self, key: str, allowed: Sequence[str]) -> _Reader:
        value = self.get(key, dict, {})
        return _Reader(self.path, f"{self.where}.{key}" if self.where else key, value, allowed)


def load(path: Path) -> Config:
    """Read and check a configuration file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no such file") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return parse(raw, path)


def parse(raw: Mapping[str, Any], path: Path) -> Config:
    top = _Reader(
        path,
        "",
        raw,
        ["store", "defaults", "admins", "discord", "slack", "console", "server", "counts"],
    )
    store = top.table_at("store", ["url"])
    defaults = top.table_at("defaults", ["interval", "stale_after_failures", "stale_after_minutes"])
    counts_raw = top.get("counts", list, [])
    counts = tuple(_count(path, i, c, defaults) for i, c in enumerate(counts_raw))
    ids = [c.count.id for c in counts]
    for i, count_id in enumerate(ids):
        if count_id in ids[:i]:
            raise ConfigError(f"{path}: counts[{i}].id: {count_id!r} is used twice")
    return Config(
        path=path,
        store_url=store.get("url", str, DEFAULT_STORE),
        counts=counts,
        admins=_admins(top),
        discord=_discord(top) if "discord" in raw else None,
        slack=_slack(top) if "slack" in raw else None,
        console=bool(top.table_at("console", ["enabled"]).get("enabled", bool, False)),
        server=_server(top) if "server" in raw else None,
    )


def _count(path: Path, i: int, raw: Any, defaults: _Reader) -> CountConfig:
    where = f"counts[{i}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected a table")
    r = _Reader(
        path,
        where,
        raw,
        [
            "id", "title", "choices", "rule", "tie_holder", "threshold", "eligible", "received",
            "status", "interval", "stale_after_failures", "stale_after_minutes", "source",
        ],
    )  # fmt: skip
    choices = []
    for j, c in enumerate(r.need("choices", list)):
        if not isinstance(c, dict) or set(c) - {"id", "label"} or "id" not in c:
            raise r.error(f"choices[{j}]", 'expected { id = "yes", label = "Yes" }')
        choices.append(Choice(str(c["id"]), str(c.get("label", c["id"]))))
    rule_name = r.get("rule", str, "majority")
    try:
        kind = RuleKind(rule_name)
    except ValueError:
        raise r.error("rule", f"must be one of {', '.join(k.value for k in RuleKind)}") from None
    threshold = None
    if "threshold" in raw:
        try:
            threshold = Fraction(str(r.get("threshold", (str, int, float))))
        except (ValueError, ZeroDivisionError):
            raise r.error("threshold", 'expected a fraction like "2/3"') from None
    status_name = r.get("status", str, CountStatus.COUNTING.value)
    try:
        status = CountStatus(status_name)
    except ValueError:
        raise r.error(
            "status", f"must be one of {', '.join(s.value for s in CountStatus)}"
        ) from None
    try:
        count = Count(
            id=r.need("id", str),
            title=r.need("title", str),
            choices=tuple(choices),
            rule=DecisionRule(kind, r.get("tie_holder", str), threshold),
            eligible=r.get("eligible", int),
            received=r.get("received", int),
            status=status,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None
    interval = float(r.get("interval", (int, float), defaults.get("interval", (int, float), 15)))
    if interval < MIN_INTERVAL:
        raise r.error("interval", f"must be at least {MIN_INTERVAL:g} second")
    source = r.get("source", dict, {"kind": "manual"})
    if "kind" not in source:
        raise r.error("source.kind", "is required (http_json, http_csv, file, manual, replay)")
    failures = r.get("stale_after_failures", int, defaults.get("stale_after_failures", int, 5))
    minutes = r.get(
        "stale_after_minutes", (int, float), defaults.get("stale_after_minutes", (int, float), 10)
    )
    return CountConfig(count, source, interval, failures, float(minutes) * 60)


def _channel_ref(path: Path, where: str, text: str) -> ChannelRef:
    try:
        platform_name, rest = text.split(":", 1)
        workspace, channel = rest.split("/", 1)
        return ChannelRef(Platform(platform_name), workspace, channel)
    except ValueError:
        raise ConfigError(
            f"{path}: {where}: {text!r} should look like 'discord:GUILD_ID/CHANNEL_ID', "
            "'slack:TEAM_ID/CHANNEL_ID' or 'console:local/console'"
        ) from None


def _admins(top: _Reader) -> Admins:
    r = top.table_at(
        "admins",
        ["discord_users", "discord_roles", "slack_users", "slack_workspace_admins", "console",
         "alerts"],
    )  # fmt: skip

    def ids(key: str) -> frozenset[str]:
        return frozenset(str(v) for v in r.get(key, list, []))

    alerts = tuple(
        _channel_ref(top.path, f"admins.alerts[{i}]", str(a))
        for i, a in enumerate(r.get("alerts", list, []))
    )
    return Admins(
        discord_users=ids("discord_users"),
        discord_roles=ids("discord_roles"),
        slack_users=ids("slack_users"),
        slack_workspace_admins=r.get("slack_workspace_admins", bool, True),
        console=r.get("console", bool, True),
        alerts=alerts,
    )


def _limits(r: _Reader) -> tuple[tuple[str, int, float], ...]:
    """A ``limits`` table: ``"bucket name" = [requests, seconds]``."""
    out = []
    for name, value in r.get("limits", dict, {}).items():
        ok = isinstance(value, list) and len(value) == 2
        n, seconds = value if ok else (0, 0)
        if not (ok and type(n) is int and n >= 1 and type(seconds) in (int, float) and seconds > 0):
            raise r.error(f"limits.{name}", "expected [requests, seconds], e.g. [50, 1.0]")
        out.append((str(name), n, float(seconds)))
    return tuple(out)


def _discord(top: _Reader) -> DiscordConfig:
    r = top.table_at("discord", ["api_base", "gateway_url", "guilds", "limits"])
    d = DiscordConfig()
    guilds = tuple(int(g) for g in r.get("guilds", list, []))
    return DiscordConfig(
        api_base=r.get("api_base", str, d.api_base),
        gateway_url=r.get("gateway_url", str, d.gateway_url),
        guilds=guilds,
        limits=_limits(r),
    )


def _slack(top: _Reader) -> SlackConfig:
    r = top.table_at("slack", ["mode", "api_base", "http_path", "limits"])
    d = SlackConfig()
    mode = r.get("mode", str, d.mode)
    if mode not in ("socket", "http"):
        raise r.error("mode", "must be 'socket' or 'http'")
    return SlackConfig(
        mode=mode,
        api_base=r.get("api_base", str, d.api_base),
        http_path=r.get("http_path", str, d.http_path),
        limits=_limits(r),
    )


def _server(top: _Reader) -> ServerConfig:
    r = top.table_at("server", ["host", "port", "push_secret_env", "max_body_bytes"])
    d = ServerConfig()
    host = r.get("host", str, d.host)
    if not host.strip():
        raise r.error("host", 'is empty (use "127.0.0.1", or "0.0.0.0" in a container)')
    port = r.get("port", int, d.port)
    if not 0 <= port <= 65535:
        raise r.error("port", f"must be 0 to 65535 (0: any free port), got {port}")
    env_name = r.get("push_secret_env", str, d.push_secret_env)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", env_name):
        raise r.error("push_secret_env", f"{env_name!r} is not an environment variable name")
    max_body = r.get("max_body_bytes", int, d.max_body_bytes)
    if max_body < 1:
        raise r.error("max_body_bytes", f"must be at least 1, got {max_body}")
    return ServerConfig(host=host, port=port, push_secret_env=env_name, max_body_bytes=max_body)
