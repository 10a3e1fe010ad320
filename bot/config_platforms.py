"""The platform tables of the configuration: ``[discord]``, ``[slack]`` and ``[server]``.

Read by :func:`bot.config.parse` with the same :class:`~bot.config_reader.Reader` as the rest of
the file; ``config/example.toml`` documents every key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bot.config_reader import Reader, describe

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
    host: str = "127.0.0.1"
    """HTTP mode without a ``[server]`` table: the address the endpoint listens on."""
    port: int = 3000
    """HTTP mode without a ``[server]`` table: the port (with ``[server]``, the ops server's)."""
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


def discord(top: Reader) -> DiscordConfig:
    r = top.table_at("discord", ["api_base", "gateway_url", "guilds", "limits"])
    d = DiscordConfig()
    guilds = []
    for j, g in enumerate(r.get("guilds", list, [])):
        if isinstance(g, bool) or not isinstance(g, int | str) or not str(g).isdigit():
            r.problems.add(
                str(
                    r.error(
                        f"guilds[{j}]",
                        f"{describe(g)} is not a server id: guilds are numbers like "
                        "123456789012345678 (Developer Mode on, right-click the server, "
                        "Copy Server ID)",
                    )
                )
            )
            continue
        guilds.append(int(g))
    return DiscordConfig(
        api_base=r.get("api_base", str, d.api_base),
        gateway_url=r.get("gateway_url", str, d.gateway_url),
        guilds=tuple(guilds),
        limits=_limits(r),
    )


def slack(top: Reader) -> SlackConfig:
    r = top.table_at("slack", ["mode", "api_base", "http_path", "host", "port", "limits"])
    d = SlackConfig()
    mode = r.get("mode", str, d.mode)
    if mode not in ("socket", "http"):
        raise r.error("mode", "must be 'socket' or 'http'")
    return SlackConfig(
        mode=mode,
        api_base=r.get("api_base", str, d.api_base),
        http_path=r.get("http_path", str, d.http_path),
        host=_host(r, d.host),
        port=_port(r, d.port),
        limits=_limits(r),
    )


def _limits(r: Reader) -> tuple[tuple[str, int, float], ...]:
    """A ``limits`` table: ``"bucket name" = [requests, seconds]``."""
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


def _host(r: Reader, default: str) -> str:
    host: str = r.get("host", str, default)
    if not host.strip():
        raise r.error("host", 'is empty (use "127.0.0.1", or "0.0.0.0" in a container)')
    return host


def _port(r: Reader, default: int) -> int:
    port: int = r.get("port", int, default)
    if not 0 <= port <= 65535:
        raise r.error("port", f"must be 0 to 65535 (0: any free port), got {port}")
    return port


def server(top: Reader) -> ServerConfig:
    r = top.table_at("server", ["host", "port", "push_secret_env", "max_body_bytes"])
    d = ServerConfig()
    host = r.problems.attempt(lambda: _host(r, d.host), d.host)
    port = r.problems.attempt(lambda: _port(r, d.port), d.port)
    env_name = r.get("push_secret_env", str, d.push_secret_env)
    if not ENV_NAME.fullmatch(env_name):
        raise r.error("push_secret_env", f"{env_name!r} is not an environment variable name")
    max_body = r.get("max_body_bytes", int, d.max_body_bytes)
    if max_body < 1:
        raise r.error("max_body_bytes", f"must be at least 1, got {max_body}")
    return ServerConfig(host=host, port=port, push_secret_env=env_name, max_body_bytes=max_body)
