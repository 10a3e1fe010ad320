"""Build a :class:`~bot.sources.base.Source` from a count's ``source`` table in the config.

Every kind takes ``kind`` (required) and ``name`` (optional; goes into ``Tally.source``; the
default is the kind with a dash, e.g. ``"http-json"``). The other keys, by kind (each module's
docstring has a full example):

``kind = "http_json"`` (:mod:`bot.sources.http_json`)
    ``url`` (required), ``fields``, ``state_values``, ``timeout`` (10), ``max_bytes``
    (1048576), ``headers``, ``headers_from_env``.
``kind = "http_csv"`` (:mod:`bot.sources.http_csv`)
    As http_json, plus ``layout`` (``"rows"`` (default) or ``"pairs"``).
``kind = "file"`` (:mod:`bot.sources.file`)
    ``path`` (required; relative to the config's folder), ``format`` (``"json"`` or ``"csv"``;
    default from the extension), ``layout`` (CSV only), ``fields``, ``state_values``,
    ``max_bytes`` (1048576).
``kind = "manual"`` (:mod:`bot.sources.manual`)
    Nothing else.
``kind = "replay"`` (:mod:`bot.sources.replay`)
    ``path`` (required; relative to the config's folder), ``speed`` (1).

``fields`` and ``state_values`` are described in :mod:`bot.sources.mapping`; ``timeout``,
``max_bytes``, ``headers`` and ``headers_from_env`` in :mod:`bot.sources.http`.

Every mistake is a :class:`~bot.errors.ConfigError` whose message starts with ``where`` and the
key, then says what is wrong, e.g. ``config.toml: counts[0].source.timeout: must be a number of
seconds above 0, got "ten" (text)``. Unknown keys are errors, with the closest valid key
suggested.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import NoReturn

from yarl import URL

from bot.clock import Clock
from bot.errors import ConfigError
from bot.model import Count, TallyState
from bot.sources.base import Source
from bot.sources.csv_doc import CsvLayout
from bot.sources.file import FileFormat, FileSource
from bot.sources.http import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, SECRET_HEADERS, HttpOptions
from bot.sources.http_csv import HttpCsvSource
from bot.sources.http_json import HttpJsonSource
from bot.sources.json_doc import check_path
from bot.sources.manual import ManualSource
from bot.sources.mapping import OPTIONAL_TARGETS, FieldMap, StateValues
from bot.sources.replay import ReplaySource

_HTTP_KEYS = (
    "url",
    "fields",
    "state_values",
    "timeout",
    "max_bytes",
    "headers",
    "headers_from_env",
)
KEYS: Mapping[str, tuple[str, ...]] = {
    "http_json": ("kind", "name", *_HTTP_KEYS),
    "http_csv": ("kind", "name", *_HTTP_KEYS, "layout"),
    "file": ("kind", "name", "path", "format", "layout", "fields", "state_values", "max_bytes"),
    "manual": ("kind", "name"),
    "replay": ("kind", "name", "path", "speed"),
}
"""The keys each kind accepts."""

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def build_source(
    count: Count,
    cfg: Mapping[str, object],
    *,
    clock: Clock,
    base_dir: Path,
    where: str,
    env: Mapping[str, str] | None = None,
) -> Source:
    """The source ``cfg`` describes for ``count``; ConfigError naming ``where`` and the key.

    ``env`` is where ``headers_from_env`` looks (default: the process environment).
    """
    t = _Table(cfg, where)
    kind = t.choice("kind", KEYS, required=True) or ""
    t.only(KEYS[kind])
    name = t.text("name") or kind.replace("_", "-")
    if kind == "manual":
        return ManualSource(name)
    if kind == "replay":
        path = _path(t, base_dir)
        speed = t.number("speed", default=1.0)
        return ReplaySource(count, path, clock=clock, speed=speed, name=name)
    states = _state_values(t)
    if kind == "file":
        path = _path(t, base_dir)
        fmt_name = t.choice("format", [f.value for f in FileFormat])
        fmt = FileFormat(fmt_name) if fmt_name else FileFormat.from_suffix(path)
        if fmt is None:
            t.fail(
                "format",
                f"cannot tell the format of {path.name!r} from its extension; "
                'set format = "json" or "csv"',
            )
        layout = _layout(t, csv=fmt is FileFormat.CSV)
        fields = _fields(t, count, json_paths=fmt is FileFormat.JSON)
        max_bytes = t.integer("max_bytes", default=DEFAULT_MAX_BYTES, minimum=1)
        return FileSource(
            count,
            path,
            clock=clock,
            format=fmt,
            layout=layout,
            fields=fields,
            states=states,
            max_bytes=max_bytes,
            name=name,
        )
    options = _http_options(t, os.environ if env is None else env)
    if kind == "http_json":
        fields = _fields(t, count, json_paths=True)
        return HttpJsonSource(count, options, clock=clock, fields=fields, states=states, name=name)
    layout = _layout(t, csv=True)
    fields = _fields(t, count, json_paths=False)
    return HttpCsvSource(
        count, options, clock=clock, layout=layout, fields=fields, states=states, name=name
    )


def _key(key: str) -> str:
    """A key as written in TOML: bare when it can be, quoted otherwise."""
    return key if _BARE_KEY.match(key) else json.dumps(key)


def _describe(value: object) -> str:
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "true/false"),
        (int, "an integer"),
        (float, "a number"),
        (str, "text"),
        ((list, tuple), "a list"),
        (Mapping, "a table"),
    ]
    kind = next((label for t, label in kinds if isinstance(value, t)), type(value).__name__)
    shown = json.dumps(value) if isinstance(value, str) else repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{shown} ({kind})"


def _suggest(word: str, options: Collection[str]) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class _Table:
    """Typed reads from one config table, with errors that name the key."""

    def __init__(self, data: Mapping[str, object], where: str) -> None:
        if not isinstance(data, Mapping):
            raise ConfigError(f"{where}: must be a table, got {_describe(data)}")
        self.data = data
        self.where = where

    def fail(self, key: str | None, problem: str) -> NoReturn:
        """Raise ConfigError for ``key`` (or the table itself when None)."""
        at = self.where if key is None else f"{self.where}.{_key(key)}"
        raise ConfigError(f"{at}: {problem}")

    def only(self, allowed: Collection[str]) -> None:
        """Refuse keys not in ``allowed``, suggesting the closest one."""
        for key in self.data:
            if not isinstance(key, str):
                self.fail(None, f"key {key!r} is not text")
            if key not in allowed:
                valid = ", ".join(sorted(allowed))
                self.fail(
                    None,
                    f"unknown key {key!r}{_suggest(key, allowed)}; valid keys here: {valid}",
                )

    def sub(self, key: str) -> _Table | None:
        """The sub-table at ``key``, or None when absent."""
        value = self.data.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.fail(key, f"must be a table, got {_describe(value)}")
        return _Table(value, f"{self.where}.{_key(key)}")

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


def _path(t: _Table, base_dir: Path) -> Path:
    raw = t.required_text("path", what=' (e.g. path = "feeds/bessemer.json")')
    path = Path(raw).expanduser()
    return path if path.is_absolute() else base_dir / path


def _layout(t: _Table, *, csv: bool) -> CsvLayout:
    value = t.choice("layout", [layout.value for layout in CsvLayout])
    if value is None:
        return CsvLayout.ROWS
    if not csv:
        t.fail("layout", "only applies to CSV files")
    return CsvLayout(value)


def _fields(t: _Table, count: Count, *, json_paths: bool) -> FieldMap:
    table = t.sub("fields")
    if table is None:
        return FieldMap.default(count)
    table.only(("votes", *OPTIONAL_TARGETS))

    def locator(target: _Table, key: str) -> str:
        value = target.required_text(key)
        if json_paths:
            problem = check_path(value)
            if problem is not None:
                target.fail(key, problem)
        return value

    votes: dict[str, str] = dict(FieldMap.default(count).votes)
    vote_table = table.sub("votes")
    if vote_table is not None:
        for choice in vote_table.data:
            if choice not in count.choice_ids:
                ids = ", ".join(map(repr, count.choice_ids))
                vote_table.fail(
                    None,
                    f"unknown choice {choice!r}{_suggest(choice, count.choice_ids)}; "
                    f"count {count.id!r} has choices {ids}",
                )
            votes[choice] = locator(vote_table, choice)
    optional = {
        name: locator(table, name) for name in OPTIONAL_TARGETS if table.data.get(name) is not None
    }
    return FieldMap(votes=votes, **optional)


def _state_values(t: _Table) -> StateValues:
    names = [s.value for s in TallyState]

    def check(word: str, state: str) -> str | None:
        if not word.strip():
            return "the word is empty"
        if state not in names:
            return (
                f"bad state value {state!r}{_suggest(state, names)}; "
                f"must be one of {', '.join(names)}"
            )
        return None

    words = t.text_map("state_values", check)
    try:
        return StateValues(words)
    except ConfigError as exc:
        t.fail("state_values", str(exc).removeprefix("state_values: "))


def _http_options(t: _Table, env: Mapping[str, str]) -> HttpOptions:
    url = t.required_text("url", what=' (e.g. url = "https://example.org/feed.json")')
    try:
        parsed = URL(url)
    except (ValueError, TypeError) as exc:
        t.fail("url", f"not a valid URL ({exc})")
    if parsed.scheme not in ("http", "https") or not parsed.host:
        t.fail("url", f"must be an http:// or https:// address, got {url!r}")
    timeout = t.number("timeout", default=DEFAULT_TIMEOUT)
    max_bytes = t.integer("max_bytes", default=DEFAULT_MAX_BYTES, minimum=1)

    def header_problem(header: str) -> str | None:
        if not _HEADER_NAME.match(header):
            return f"{header!r} is not a valid header name"
        return None

    def static(header: str, value: str) -> str | None:
        if header.casefold() in SECRET_HEADERS:
            return (
                f"{header} is a secret and does not belong in the config; "
                f'use headers_from_env = {{ {header} = "ENV_VAR_NAME" }}'
            )
        return header_problem(header) or (
            "header values cannot contain line breaks" if "\n" in value or "\r" in value else None
        )

    def from_env(header: str, var: str) -> str | None:
        problem = header_problem(header)
        if problem is not None:
            return problem
        if not _ENV_NAME.match(var):
            return f"{var!r} is not an environment variable name"
        if not env.get(var):
            return f"environment variable {var!r} is not set (or is empty)"
        return None

    headers = t.text_map("headers", static)
    secret = t.text_map("headers_from_env", from_env)
    clash = {h.casefold() for h in headers} & {h.casefold() for h in secret}
    if clash:
        t.fail("headers_from_env", f"header {sorted(clash)[0]!r} is also set in headers")
    merged = {**headers, **{h: env[var] for h, var in secret.items()}}
    return HttpOptions(url=url, timeout=timeout, max_bytes=max_bytes, headers=merged)
