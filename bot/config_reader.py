"""Reading a configuration document table by table, collecting every problem on the way.

:class:`Problems` gathers the problems of one file (each ``FILE: KEY: PROBLEM``, once), so that a
check reports all of them instead of stopping at the first; :meth:`Problems.attempt` runs one
independent piece of the check and records its :class:`~bot.errors.ConfigError`. :class:`Reader`
reads one table: unknown keys and values of the wrong type are recorded (the default is used in
their place, so the rest of the table is still checked); a missing required key raises.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from bot.errors import ConfigError

T = TypeVar("T")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "true/false"),
    (int, "an integer"),
    (float, "a number"),
    (str, "text"),
    ((list, tuple), "a list"),
    (Mapping, "a table"),
)


def kind_of(value: object) -> str:
    """What ``value`` is, in TOML's words: ``text``, ``a table``, ``an array``, ..."""
    return next((label for t, label in _KINDS if isinstance(value, t)), "a date or time")


def describe(value: object) -> str:
    """A short, safe rendering of a value for an error message: ``"ten" (text)``, ``a table``."""
    if isinstance(value, Mapping):
        return "a table"
    if isinstance(value, list | tuple) and len(repr(value)) > 60:
        return f"a list of {len(value)}"
    shown = json.dumps(value) if isinstance(value, str) else repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({kind_of(value)})"


def toml_key(key: str) -> str:
    """A key as written in TOML: bare when it can be, quoted otherwise."""
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def suggest(word: str, options: Collection[str]) -> str:
    """`` (did you mean 'x'?)`` for a close option, else nothing."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class Recorded(ConfigError):
    """A problem already recorded in :class:`Problems`: it stops a check, adding nothing."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.problems = ()


class Problems:
    """Every problem found in one configuration file, in the order found, each once."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.items: list[str] = []

    def add(self, problem: str) -> None:
        if problem not in self.items:
            self.items.append(problem)

    def add_error(self, exc: ConfigError) -> None:
        for problem in exc.problems:
            self.add(problem)

    def attempt(self, check: Callable[[], T], fallback: T) -> T:
        """``check()``, or ``fallback`` with its ConfigError recorded."""
        try:
            return check()
        except ConfigError as exc:
            self.add_error(exc)
            return fallback

    def raise_any(self) -> None:
        """Raise one ConfigError listing every problem recorded, if there is any."""
        if self.items:
            raise ConfigError.of(self.items)


class Reader:
    """Reads one table of the TOML document and says exactly where a problem is."""

    def __init__(
        self,
        path: Path,
        where: str,
        table: Mapping[str, Any],
        allowed: Sequence[str],
        problems: Problems | None = None,
    ) -> None:
        self.path = path
        self.where = where
        self.table = table
        self.problems = problems if problems is not None else Problems(path)
        for key in table:
            if key not in allowed:
                close = suggest(key, allowed)
                hint = close or f"; known keys: {', '.join(allowed)}"
                self.problems.add(str(self.error(key, f"unknown key{hint}")))

    def error(self, key: str, problem: str) -> ConfigError:
        """A problem at ``key``; a key that is not a bare TOML key is quoted (``"a b"``), and a
        key with an index (``choices[0]``) is written as is."""
        key = key if re.fullmatch(r"[A-Za-z0-9_-]+\[\d+\]", key) else toml_key(key)
        where = f"{self.where}.{key}" if self.where else key
        return ConfigError(f"{self.path}: {where}: {problem}")

    def get(self, key: str, kind: type[Any] | tuple[type[Any], ...], default: Any = None) -> Any:
        """The value at ``key`` if it is a ``kind``; else ``default`` (a wrong type is recorded)."""
        if key not in self.table:
            return default
        value = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            value = _WRONG  # True is an int to Python, not to a reader of the file
        if isinstance(value, float) and value != value:  # nan
            value = _WRONG
        if value is _WRONG or not isinstance(value, kind):
            self.problems.add(str(self.error(key, self._wrong(key, kinds, self.table[key]))))
            return default
        return value

    @staticmethod
    def _wrong(key: str, kinds: tuple[type[Any], ...], value: object) -> str:
        if list in kinds and isinstance(value, Mapping):
            return (
                f"expected a list, got a table: write each entry as [[{key}]] "
                f"(two brackets), not [{key}]"
            )
        wanted = " or ".join(dict.fromkeys(kind_of(_SAMPLES[k]) for k in kinds if k in _SAMPLES))
        return f"expected {wanted or 'something else'}, got {describe(value)}"

    def need(self, key: str, kind: type[Any] | tuple[type[Any], ...]) -> Any:
        if key not in self.table:
            raise self.error(key, "is required")
        value = self.get(key, kind)
        if value is None:
            raise Recorded(str(self.error(key, "has the wrong type")))
        return value

    def table_at(self, key: str, allowed: Sequence[str]) -> Reader:
        value = self.get(key, dict, {})
        where = f"{self.where}.{key}" if self.where else key
        return Reader(self.path, where, value, allowed, self.problems)


_WRONG = object()
_SAMPLES: dict[type[Any], object] = {
    bool: True,
    int: 1,
    float: 1.0,
    str: "",
    list: [],
    dict: {},
}
