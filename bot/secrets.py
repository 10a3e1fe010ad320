"""Secrets come from the environment, or from a file named by ``NAME_FILE`` (Docker secrets).

They are never read from the configuration file and never logged: ``Secret`` hides its value
from ``repr`` and ``str``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import make_url

from bot.config import Config
from bot.config_reader import Problems
from bot.errors import ConfigError

MIN_LENGTH = 16
"""Shorter than this is not a real token or secret (a placeholder, a typo, a truncated paste);
it is refused at start, and it would make the logs unreadable once scrubbed."""

KNOWN = (
    "DISCORD_TOKEN",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "TALLYBOT_PUSH_SECRET",
)


class Secret:
    __slots__ = ("_value", "name")

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret({self.name}=***)"

    __str__ = __repr__


def secret(name: str, env: Mapping[str, str] | None = None) -> Secret | None:
    """``NAME`` from the environment, else the contents of the file ``NAME_FILE`` names."""
    env = os.environ if env is None else env
    value = env.get(name)
    where = name
    if not value:
        file_name = env.get(f"{name}_FILE")
        if not file_name:
            return None
        where = f"{name}_FILE ({file_name})"
        try:
            value = Path(file_name).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{where}: the file is not UTF-8 text") from exc
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise ConfigError(f"{name}_FILE: cannot read {file_name}: {why}") from exc
    value = value.strip()
    if len(value) < MIN_LENGTH:
        raise ConfigError(
            f"{where}: {'empty' if not value else f'only {len(value)} characters'}: "
            f"too short to be a real token or secret (at least {MIN_LENGTH})"
        )
    return Secret(name, value)


def require(name: str, env: Mapping[str, str] | None = None) -> Secret:
    found = secret(name, env)
    if found is None:
        raise ConfigError(
            f"{name} is not set: export {name}=... or {name}_FILE=/path/to/file "
            "(see tallybot.env.example)"
        )
    return found


def all_values(env: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> list[str]:
    """Every configured secret's value (for scrubbing logs): the ``KNOWN`` ones and ``names``.

    A value that cannot be used (too short, an unreadable file) is left out: the command that
    needs it refuses to start and says why."""
    values = []
    for name in dict.fromkeys([*KNOWN, *names]):
        try:
            found = secret(name, env)
        except ConfigError:
            continue
        if found is not None:
            values.append(found.reveal())
    return values


@dataclass(frozen=True, slots=True)
class PlatformSecrets:
    """The tokens the configured platforms need, read once (see :func:`platform_secrets`)."""

    discord_token: Secret | None = None
    slack_bot_token: Secret | None = None
    slack_app_token: Secret | None = None
    slack_signing_secret: Secret | None = None
    push_secret: Secret | None = None
    store_password: Secret | None = None


def platform_secrets(cfg: Config, env: Mapping[str, str] | None = None) -> PlatformSecrets:
    """Every secret ``cfg`` needs, or one ConfigError naming every missing or unusable one.

    Discord needs ``DISCORD_TOKEN``; Slack ``SLACK_BOT_TOKEN`` and, in Socket Mode,
    ``SLACK_APP_TOKEN``, in HTTP mode ``SLACK_SIGNING_SECRET``. The push secret is optional (push
    answers 503 without it), but refused when set and too short.
    """
    problems = Problems(cfg.path)

    def read(name: str, needed: bool, table: str) -> Secret | None:
        try:
            return require(name, env) if needed else secret(name, env)
        except ConfigError as exc:
            problems.add(f"{cfg.path}: {table}: {exc}")
            return None

    slack = cfg.slack
    socket = slack is not None and slack.mode == "socket"
    found = PlatformSecrets(
        discord_token=read("DISCORD_TOKEN", True, "discord") if cfg.discord else None,
        slack_bot_token=read("SLACK_BOT_TOKEN", True, "slack") if slack else None,
        slack_app_token=read("SLACK_APP_TOKEN", socket, "slack") if slack else None,
        slack_signing_secret=read("SLACK_SIGNING_SECRET", not socket, "slack") if slack else None,
        push_secret=(
            read(cfg.server.push_secret_env, False, "server.push_secret_env")
            if cfg.server is not None
            else None
        ),
        store_password=(
            read(cfg.store_password_env, True, "store.password_env")
            if cfg.store_password_env
            else None
        ),
    )
    problems.raise_any()
    return found


def store_url(cfg: Config, env: Mapping[str, str] | None = None) -> str:
    """The store URL with the password from ``[store] password_env`` put in, if there is one."""
    if cfg.store_password_env is None:
        return cfg.store_url
    password = require(cfg.store_password_env, env).reveal()
    url = make_url(cfg.store_url).set(password=password)
    return url.render_as_string(hide_password=False)
