"""Typed reads from one table of a count's ``source`` configuration, with errors that name the
key (``config.toml: counts[0].source.timeout: must be a number above 0, got "ten" (text)``).

Unknown keys and the problems of independent reads (:meth:`Table.attempt`) are collected, so a
check reports every problem in the table at once (:meth:`Table.raise_any`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import NoReturn, TypeVar

from bot.config_reader import Problems
from bot.config_reader import describe as _describe
from bot.config_reader import suggest as _suggest
from bot.config_reader import toml_key as _key
from bot.errors import ConfigError

T = TypeVar("T")
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Table:
    """Typed reads from one config table, with errors that name the key."""

    def __init__(self, data: Mapping[str, object], where: str, problems: Problems) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: must be a table, got {_describe(data)}")
        self.data = data
        self.where = where
        self.problems = problems

    def attempt(self, read: Callable[[], T], fallback: T) -> T:
        """``read()``, or ``fallback`` with its problem recorded (the check goes on)."""
        return self.problems.attempt(read, fallback)

    def raise_any(self) -> None:
        """Raise one ConfigError listing every problem recorded so far."""
        self.problems.raise_any()

    def fail(self, key: str | None, problem: str) -> NoReturn:
        """Raise ConfigError for ``key`` (or the table itself when None)."""
        at = self.where if key is None else f"{self.where}.{_key(key)}"
        raise ConfigError(f"{at}: {problem}")

    def only(self, allowed: Collection[str]) -> None:
        """Record every key not in ``allowed``, suggesting the closest one."""
        valid = ", ".join(sorted(allowed))
        for key in self.data:
            if not isinstance(key, str):
                self.problems.add(f"{self.where}: key {key!r} is not text")
            elif key not in allowed:
                self.problems.add(
                    f"{self.where}: unknown key {key!r}{_suggest(key, allowed)}; "
                    f"valid keys here: {valid}"
                )

    def sub(self, key: str) -> Table | None:
        """The sub-table at ``key``, or None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail(key, f"must be a table, got {_describe(value)}")
        return Table(value, f"{self.where}.{_key(key)}", self.problems)

    def text(self, key: str, *, required: bool = False, what: str = "") -> str | None:
        """A non-empty string at ``key``."""
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, f"missing{what}")
            return None
        if not isinstance(value, str):
            self.fail(key, f"must be text, got {_describe(value)}")
        if not value.strip():
            self.fail(key, "is empty")
        return value

    def required_text(self, key: str, *, what: str = "") -> str:
        """A non-empty string at ``key`` that must be there; ``what`` hints at a value."""
        value = self.text(key, required=True, what=what)
        if value is None:  # text() has already raised
            self.fail(key, "missing")
        return value

    def choice(self, key: str, options: Collection[str], *, required: bool = False) -> str | None:
        """One of ``options`` at ``key``, suggesting the closest one on a typo."""
        listed = ", ".join(map(repr, sorted(options)))
        value = self.text(key, required=required, what=f" (one of {listed})")
        if value is not None and value not in options:
            self.fail(key, f"unknown value {value!r}{_suggest(value, options)}; one of {listed}")
        return value

    def number(self, key: str, *, default: float) -> float:
        """A finite number above 0 at ``key``."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            self.fail(key, f"must be a number above 0, got {_describe(value)}")
        if not math.isfinite(value):
            self.fail(key, f"must be a finite number, got {_describe(value)}")
        return float(value)

    def integer(self, key: str, *, default: int, minimum: int) -> int:
        """An integer of at least ``minimum`` at ``key``."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(key, f"must be a whole number of at least {minimum}, got {_describe(value)}")
        return value

    def text_map(self, key: str, check: Callable[[str, str], str | None]) -> dict[str, str]:
        """A table of text values at ``key``; ``check(k, v)`` returns a problem or None."""
        table = self.sub(key)
        if table is None:
            return {}
        result: dict[str, str] = {}
        for k in table.data:
            v = table.required_text(k)
            problem = check(k, v)
            if problem is not None:
                table.fail(k, problem)
            result[k] = v
        return result
