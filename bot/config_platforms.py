"""The tables around the platforms: ``[admins]``, each platform's own table (read by its
plug-in), ``[server]``, and readers of the values platform tables share.

Read by :func:`bot.config.parse` with the same :class:`~bot.config_reader.Reader` as the rest of
the file; each platform reads its own table with these helpers (``adapters/*/settings.py``).
``config/example.toml`` documents every key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bot.config_reader import Reader, describe
from bot.delivery.pacing import Window
from bot.errors import ConfigError
from bot.platform import Plugins
from bot.subscription import ChannelRef, Platform

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class Admins:
    """Where admin notices go. Who is an admin is each platform's own setting, in its own table
    (``[discord] admin_users``, ...), applied by its admin policy (``bot.platform``)."""

    alerts: tuple[ChannelRef, ...] = ()


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """The ops server: health, readiness, metrics and push ingest (see ``bot.ops.server``)."""

    host: str = "127.0.0.1"
    port: int = 8080
    push_secret_env: str = "TALLYBOT_PUSH_SECRET"
    """The environment variable (or ``NAME_FILE``) holding the push signing secret."""
    max_body_bytes: int = 65_536
    """The largest push body accepted; a larger one is answered 413."""


def read_limits(r: Reader) -> tuple[tuple[str, int, float], ...]:
    """A ``limits`` table: ``"bucket name" = [requests, seconds]`` (rate-limit buckets of the
    platform changed by name; an unknown name fails when the adapter is built)."""
    table: dict[str, Any] = r.get("limits", dict, {})
    limits = r.table_at("limits", list(table))  # any bucket name; unknown ones fail later
    out = []
    for name, value in table.items():
        ok = isinstance(value, list) and len(value) == 2
        n, seconds = value if ok else (0, 0)
        if not (ok and type(n) is int and n >= 1 and type(seconds) in (int, float) and seconds > 0):
            raise limits.error(name, "expected [requests, seconds], e.g. [50, 1.0]")
        out.append((str(name), n, float(seconds)))
    return tuple(out)


def read_host(r: Reader, default: str) -> str:
    host: str = r.get("host", str, default)
    if not host.strip():
        raise r.error("host", 'is empty (use "127.0.0.1", or "0.0.0.0" in a container)')
    return host


def read_port(r: Reader, default: int) -> int:
    port: int = r.get("port", int, default)
    if not 0 <= port <= 65535:
        raise r.error("port", f"must be 0 to 65535 (0: any free port), got {port}")
    return port


def server(top: Reader) -> ServerConfig:
    r = top.table_at("server", ["host", "port", "push_secret_env", "max_body_bytes"])
    d = ServerConfig()
    host = r.problems.attempt(lambda: read_host(r, d.host), d.host)
    port = r.problems.attempt(lambda: read_port(r, d.port), d.port)
    env_name = r.get("push_secret_env", str, d.push_secret_env)
    if not ENV_NAME.fullmatch(env_name):
        raise r.error("push_secret_env", f"{env_name!r} is not an environment variable name")
    max_body = r.get("max_body_bytes", int, d.max_body_bytes)
    if max_body < 1:
        raise r.error("max_body_bytes", f"must be at least 1, got {max_body}")
    return ServerConfig(host=host, port=port, push_secret_env=env_name, max_body_bytes=max_body)


def windows(configured: tuple[tuple[str, int, float], ...]) -> dict[str, Window]:
    """A ``limits`` table as read by :func:`read_limits`, by bucket name (for
    ``bot.delivery.pacing.Limits.with_windows``)."""
    return {name: Window(n, seconds) for name, n, seconds in configured}


def platforms(top: Reader, plugins: Plugins) -> dict[Platform, Any]:
    """The settings of every platform whose table is there and turns it on."""
    enabled: dict[Platform, Any] = {}
    for name, plugin in plugins.items():
        if name not in top.table:
            continue
        table = top.table_at(name, plugin.keys)
        settings = top.problems.attempt(partial(plugin.read, table), None)
        if settings is not None:
            enabled[plugin.platform] = settings
    return enabled


def _channel_ref(path: Path, where: str, text: object, plugins: Plugins) -> ChannelRef:
    examples = [repr(p.channel_example) for p in plugins.values() if p.channel_example]
    shapes = " or ".join(examples) or "'PLATFORM:WORKSPACE/CHANNEL'"
    try:
        if not isinstance(text, str):
            raise ValueError(text)
        platform_name, rest = text.split(":", 1)
        workspace, channel = rest.split("/", 1)
    except ValueError:
        raise ConfigError(f"{path}: {where}: {describe(text)} should look like {shapes}") from None
    if platform_name not in plugins:
        raise ConfigError(f"{path}: {where}: {plugins.unknown(platform_name)}")
    return ChannelRef(Platform(platform_name), workspace, channel)


def admins(top: Reader, plugins: Plugins) -> Admins:
    moved = {old: (p.name, new) for p in plugins.values() for old, new in p.moved.items()}
    table: Mapping[str, Any] = top.get("admins", dict, {})
    for key in table:
        if key in moved:
            name, new = moved[key]
            top.problems.add(
                f"{top.path}: admins.{key}: no longer here (did you mean [{name}] {new}? each "
                "platform's admins are set in its own table)"
            )
    r = top.table_at("admins", ["alerts", *(k for k in table if k in moved)])
    alerts = tuple(
        ref
        for i, a in enumerate(r.get("alerts", list, []))
        if (
            ref := r.problems.attempt(
                partial(_channel_ref, top.path, f"admins.alerts[{i}]", a, plugins), None
            )
        )
        is not None
    )
    return Admins(alerts=alerts)
