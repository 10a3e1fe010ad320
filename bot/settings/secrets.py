"""Secrets come from the environment, or from a file named by ``NAME_FILE`` (Docker secrets).

They are never read from the configuration file and never logged: ``Secret`` hides its value
from ``repr`` and ``str``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from sqlalchemy import make_url

from bot.errors import ConfigError

MIN_LENGTH = 16
"""Shorter than this is not a real token or secret (a placeholder, a typo, a truncated paste);
it is refused at start, and it would make the logs unreadable once scrubbed."""

KNOWN = ("TALLYBOT_PUSH_SECRET",)
"""The core's own secrets, scrubbed from logs whatever the configuration; each platform adds
its tokens' names (``bot.platform.Plugin.secret_names``)."""


class Secret:
    __slots__ = ("_value", "name")

    def __init__(self, name: str, value: str) -> None:
        self.name = name
        self._value = value

    def reveal(self) -> str:
        return self._value

    def fingerprint(self) -> str:
        """A non-secret name for the value (the first 16 hex digits of its SHA-256): what
        tells two bots' rows apart in a shared store, never the value itself."""
        return hashlib.sha256(self._value.encode()).hexdigest()[:16]

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


def store_url(url: str, password_env: str | None, env: Mapping[str, str] | None = None) -> str:
    """The store ``url`` with the password from ``password_env`` (``[store] password_env``) put
    in, if there is one."""
    if password_env is None:
        return url
    password = require(password_env, env).reveal()
    return make_url(url).set(password=password).render_as_string(hide_password=False)
