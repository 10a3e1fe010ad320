"""Secrets come from the environment, or from a file named by ``NAME_FILE`` (Docker secrets).

They are never read from the configuration file and never logged: ``Secret`` hides its value
from ``repr`` and ``str``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from bot.errors import ConfigError

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
    if value:
        return Secret(name, value.strip())
    file_name = env.get(f"{name}_FILE")
    if file_name:
        try:
            return Secret(name, Path(file_name).read_text(encoding="utf-8").strip())
        except OSError as exc:
            raise ConfigError(f"{name}_FILE: cannot read {file_name}: {exc.strerror}") from exc
    return None


def require(name: str, env: Mapping[str, str] | None = None) -> Secret:
    found = secret(name, env)
    if found is None:
        raise ConfigError(f"{name} is not set: export {name}=... or {name}_FILE=/path/to/file")
    return found


def all_values(env: Mapping[str, str] | None = None, names: Iterable[str] = ()) -> list[str]:
    """Every configured secret's value (for scrubbing logs): the ``KNOWN`` ones and ``names``."""
    wanted = dict.fromkeys([*KNOWN, *names])
    return [s.reveal() for n in wanted if (s := secret(n, env)) is not None and s.reveal()]
