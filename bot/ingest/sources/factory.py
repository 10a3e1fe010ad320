"""Build a :class:`~bot.ingest.sources.base.Source` from a count's checked ``source`` settings.

The table itself was checked with the rest of the file (:mod:`bot.ingest.sources.settings`,
every key of every kind). What the file alone cannot tell is checked here, without opening or
connecting anything: that the file of a ``file`` or ``replay`` source exists, and that the
variables ``headers_from_env`` names are set (their values are read here, never from the file).
Every such problem is a :class:`~bot.errors.ConfigError` line that starts with ``where`` and the
key, e.g. ``config.toml: counts[0].source.path: no such file: ...``; all of them at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from bot.base.clock import Clock
from bot.base.egress import EgressPolicy
from bot.domain.model import Count
from bot.errors import ConfigError
from bot.ingest.sources.base import Source
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.file import FileSource
from bot.ingest.sources.http import HttpOptions
from bot.ingest.sources.http_csv import HttpCsvSource
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.manual import ManualSource
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.settings import (
    FileSettings,
    HttpCsvSettings,
    HttpJsonSettings,
    ManualSettings,
    ReplaySettings,
    SourceSettings,
)
from bot.settings.problems import Problems
from bot.settings.secrets import secret
from bot.settings.values import describe, toml_key


def build_source(
    count: Count,
    settings: SourceSettings,
    *,
    clock: Clock,
    base_dir: Path,
    where: str,
    env: Mapping[str, str] | None = None,
    check_files: bool = True,
    egress: EgressPolicy | None = None,
) -> Source:
    """The source ``settings`` describe for ``count``; one ConfigError naming ``where``, the key
    and the problem, for every problem of the machine. Nothing is opened or connected.

    ``env`` is where ``headers_from_env`` looks (default: the process environment);
    ``check_files``: the ``path`` of a file or replay source must name an existing file.
    ``egress``: an http source's URL was typed in chat: fetch it only through the guard.
    """
    problems = Problems()
    name = settings.label
    source: Source
    if isinstance(settings, ManualSettings):
        source = ManualSource(name)
    elif isinstance(settings, ReplaySettings):
        path = problems.attempt(lambda: _path(settings.path, base_dir, where, check_files), Path())
        source = ReplaySource(count, path, clock=clock, speed=settings.speed, name=name)
    elif isinstance(settings, FileSettings):
        path = problems.attempt(lambda: _path(settings.path, base_dir, where, check_files), Path())
        source = FileSource(
            count,
            path,
            clock=clock,
            format=settings.file_format,
            layout=settings.layout or CsvLayout.ROWS,
            fields=settings.fields.field_map(count),
            states=settings.states(),
            max_bytes=settings.max_bytes,
            name=name,
        )
    else:
        options = _options(settings, os.environ if env is None else env, where, problems)
        options = replace(options, egress=egress)
        fields, states = settings.fields.field_map(count), settings.states()
        if isinstance(settings, HttpJsonSettings):
            source = HttpJsonSource(
                count, options, clock=clock, fields=fields, states=states, name=name
            )
        else:
            source = HttpCsvSource(
                count,
                options,
                clock=clock,
                layout=settings.layout,
                fields=fields,
                states=states,
                name=name,
            )
    problems.raise_any()
    return source


def _path(raw: str, base_dir: Path, where: str, check_file: bool) -> Path:
    """The file at ``raw`` (relative to the config's folder); ``check_file``: it must exist."""
    try:
        path = Path(raw).expanduser()
    except RuntimeError:  # ~user that does not exist
        raise ConfigError(f"{where}.path: {describe(raw)}: no such user's home folder") from None
    path = path if path.is_absolute() else base_dir / path
    if check_file and path.is_dir():
        raise ConfigError(f"{where}.path: {path} is a folder, not a file")
    if check_file and not path.is_file():
        raise ConfigError(f"{where}.path: no such file: {path} (create it first, or fix the path)")
    return path


def _options(
    settings: HttpJsonSettings | HttpCsvSettings,
    env: Mapping[str, str],
    where: str,
    problems: Problems,
) -> HttpOptions:
    headers = dict(settings.headers)
    for header, var in settings.headers_from_env.items():
        at = f"{where}.headers_from_env.{toml_key(header)}"
        try:
            found = secret(var, env)
        except ConfigError as exc:
            problems.add(f"{at}: {exc}")
            continue
        if found is None:
            problems.add(
                f"{at}: environment variable {var!r} is not set (or is empty): "
                f"export {var}=... or {var}_FILE=/path/to/file"
            )
            continue
        headers[header] = found.reveal()
    return HttpOptions(
        url=settings.url, timeout=settings.timeout, max_bytes=settings.max_bytes, headers=headers
    )
