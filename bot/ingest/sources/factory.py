"""Build a :class:`~bot.ingest.sources.base.Source` from a count's ``source`` table in the config.

Every kind takes ``kind`` (required) and ``name`` (optional; goes into ``Tally.source``; the
default is the kind with a dash, e.g. ``"http-json"``). The other keys, by kind (each module's
docstring has a full example):

``kind = "http_json"`` (:mod:`bot.ingest.sources.http_json`)
    ``url`` (required), ``fields``, ``state_values``, ``timeout`` (10), ``max_bytes``
    (1048576), ``headers``, ``headers_from_env``.
``kind = "http_csv"`` (:mod:`bot.ingest.sources.http_csv`)
    As http_json, plus ``layout`` (``"rows"`` (default) or ``"pairs"``).
``kind = "file"`` (:mod:`bot.ingest.sources.file`)
    ``path`` (required; relative to the config's folder), ``format`` (``"json"`` or ``"csv"``;
    default from the extension), ``layout`` (CSV only), ``fields``, ``state_values``,
    ``max_bytes`` (1048576).
``kind = "manual"`` (:mod:`bot.ingest.sources.manual`)
    Nothing else.
``kind = "replay"`` (:mod:`bot.ingest.sources.replay`)
    ``path`` (required; relative to the config's folder), ``speed`` (1).

``fields`` and ``state_values`` are described in :mod:`bot.ingest.sources.mapping`; ``timeout``,
``max_bytes``, ``headers`` and ``headers_from_env`` in :mod:`bot.ingest.sources.http`.

Every mistake is a :class:`~bot.errors.ConfigError` whose message starts with ``where`` and the
key, then says what is wrong, e.g. ``config.toml: counts[0].source.timeout: must be a number of
seconds above 0, got "ten" (text)``. Unknown keys are errors, with the closest valid key
suggested.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TypeVar

from yarl import URL

from bot.clock import Clock
from bot.config_reader import Problems
from bot.config_reader import describe as _describe
from bot.config_reader import suggest as _suggest
from bot.domain.model import Count, TallyState
from bot.errors import ConfigError
from bot.ingest.sources.base import Source
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.file import FileFormat, FileSource
from bot.ingest.sources.http import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, SECRET_HEADERS, HttpOptions
from bot.ingest.sources.http_csv import HttpCsvSource
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.json_doc import check_path
from bot.ingest.sources.manual import ManualSource
from bot.ingest.sources.mapping import OPTIONAL_TARGETS, FieldMap, StateValues
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.table import Table
from bot.secrets import secret

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

T = TypeVar("T")

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
    check_files: bool = True,
) -> Source:
    """The source ``cfg`` describes for ``count``; one ConfigError naming ``where``, the key and
    the problem, for every problem in the table. Nothing is opened or connected.

    ``env`` is where ``headers_from_env`` looks (default: the process environment);
    ``check_files``: the ``path`` of a file or replay source must name an existing file.
    """
    t = Table(cfg, where, Problems())
    kind = t.choice("kind", KEYS, required=True) or ""
    t.only(KEYS[kind])
    name = t.attempt(lambda: t.text("name"), None) or kind.replace("_", "-")
    if kind == "manual":
        t.raise_any()
        return ManualSource(name)
    if kind == "replay":
        path = t.attempt(lambda: _path(t, base_dir, check_file=check_files), Path())
        speed = t.attempt(lambda: t.number("speed", default=1.0), 1.0)
        t.raise_any()
        return ReplaySource(count, path, clock=clock, speed=speed, name=name)
    states = t.attempt(lambda: _state_values(t), StateValues({}))
    if kind == "file":
        path = t.attempt(lambda: _path(t, base_dir, check_file=check_files), Path())
        fmt = t.attempt(lambda: _format(t, path), FileFormat.JSON)
        layout = t.attempt(lambda: _layout(t, csv=fmt is FileFormat.CSV), CsvLayout.ROWS)
        fields = t.attempt(
            lambda: _fields(t, count, json_paths=fmt is FileFormat.JSON), FieldMap.default(count)
        )
        max_bytes = t.attempt(
            lambda: t.integer("max_bytes", default=DEFAULT_MAX_BYTES, minimum=1), DEFAULT_MAX_BYTES
        )
        t.raise_any()
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
    json_paths = kind == "http_json"
    fields = t.attempt(lambda: _fields(t, count, json_paths=json_paths), FieldMap.default(count))
    layout = (
        CsvLayout.ROWS if json_paths else t.attempt(lambda: _layout(t, csv=True), CsvLayout.ROWS)
    )
    t.raise_any()
    if kind == "http_json":
        return HttpJsonSource(count, options, clock=clock, fields=fields, states=states, name=name)
    return HttpCsvSource(
        count, options, clock=clock, layout=layout, fields=fields, states=states, name=name
    )


def _path(t: Table, base_dir: Path, *, check_file: bool) -> Path:
    """The file at ``path`` (relative to the config's folder); ``check_file``: it must exist."""
    raw = t.required_text("path", what=' (e.g. path = "feeds/bessemer.json")')
    if "\0" in raw:
        t.fail("path", "contains a NUL character")
    try:
        path = Path(raw).expanduser()
    except RuntimeError:  # ~user that does not exist
        t.fail("path", f"{_describe(raw)}: no such user's home folder")
    path = path if path.is_absolute() else base_dir / path
    if check_file:
        t.attempt(partial(_exists, t, path), None)
    return path


def _exists(t: Table, path: Path) -> None:
    if path.is_dir():
        t.fail("path", f"{path} is a folder, not a file")
    if not path.is_file():
        t.fail("path", f"no such file: {path} (create it first, or fix the path)")


def _format(t: Table, path: Path) -> FileFormat:
    fmt_name = t.choice("format", [f.value for f in FileFormat])
    fmt = FileFormat(fmt_name) if fmt_name else FileFormat.from_suffix(path)
    if fmt is None and not path.name:  # no path: that problem is reported already
        return FileFormat.JSON
    if fmt is None:
        t.fail(
            "format",
            f"cannot tell the format of {path.name!r} from its extension; "
            'set format = "json" or "csv"',
        )
    return fmt


def _layout(t: Table, *, csv: bool) -> CsvLayout:
    value = t.choice("layout", [layout.value for layout in CsvLayout])
    if value is None:
        return CsvLayout.ROWS
    if not csv:
        t.fail("layout", "only applies to CSV files")
    return CsvLayout(value)


def _fields(t: Table, count: Count, *, json_paths: bool) -> FieldMap:
    table = t.sub("fields")
    if table is None:
        return FieldMap.default(count)
    table.only(("votes", *OPTIONAL_TARGETS))

    def locator(target: Table, key: str) -> str:
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


def _state_values(t: Table) -> StateValues:
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


def _url(t: Table) -> str:
    url = t.required_text("url", what=' (e.g. url = "https://example.org/feed.json")')
    try:
        parsed = URL(url)
    except (ValueError, TypeError) as exc:
        t.fail("url", f"not a valid URL ({exc})")
    if parsed.scheme not in ("http", "https") or not parsed.host:
        t.fail("url", f"must be an http:// or https:// address, got {_describe(url)}")
    return url


def _http_options(t: Table, env: Mapping[str, str]) -> HttpOptions:
    url = t.attempt(lambda: _url(t), "http://unset.invalid/")
    timeout = t.attempt(lambda: t.number("timeout", default=DEFAULT_TIMEOUT), DEFAULT_TIMEOUT)
    max_bytes = t.attempt(
        lambda: t.integer("max_bytes", default=DEFAULT_MAX_BYTES, minimum=1), DEFAULT_MAX_BYTES
    )

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

    values: dict[str, str] = {}

    def from_env(header: str, var: str) -> str | None:
        problem = header_problem(header)
        if problem is not None:
            return problem
        if not _ENV_NAME.match(var):
            return f"{var!r} is not an environment variable name"
        try:
            found = secret(var, env)
        except ConfigError as exc:
            return str(exc)
        if found is None:
            return (
                f"environment variable {var!r} is not set (or is empty): "
                f"export {var}=... or {var}_FILE=/path/to/file"
            )
        values[var] = found.reveal()
        return None

    none: dict[str, str] = {}
    headers = t.attempt(lambda: t.text_map("headers", static), none)
    secrets = t.attempt(lambda: t.text_map("headers_from_env", from_env), none)
    clash = {h.casefold() for h in headers} & {h.casefold() for h in secrets}
    if clash:
        t.fail("headers_from_env", f"header {sorted(clash)[0]!r} is also set in headers")
    merged = {**headers, **{h: values[var] for h, var in secrets.items() if var in values}}
    return HttpOptions(url=url, timeout=timeout, max_bytes=max_bytes, headers=merged)
