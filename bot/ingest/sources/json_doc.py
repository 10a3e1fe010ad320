"""JSON documents: parsing a body strictly, and finding values by dotted path.

A path is a dot-separated list of steps from the top of the document: object keys, or list
indices counted from 0. ``"results.0.count"`` reads ``doc["results"][0]["count"]``. A step of
digits reads an object key of that name when the value there is an object. Keys containing dots
cannot be addressed.
"""

from __future__ import annotations

import json
from typing import NoReturn

from bot.base.clock import Clock
from bot.domain.model import Count, Tally
from bot.domain.words import count_of
from bot.errors import ConfigError, PermanentSourceError
from bot.ingest.sources.mapping import FieldMap, Found, StateValues, build_tally

INT_DIGITS_LIMIT = 4300
"""Python's default limit on the digits of ``int(str)``; figures stop far below it anyway."""


def check_path(path: str) -> str | None:
    """What is wrong with a dotted path, or None when it is well formed."""
    if not path.strip():
        return "the path is empty"
    if any(not step for step in path.split(".")):
        return f"path {path!r} has an empty step (two dots, or a dot at an end)"
    return None


def check_paths(fields: FieldMap, where: str) -> None:
    """Raise ConfigError naming the first malformed path in ``fields``."""
    for target, path in fields.targets():
        problem = check_path(path)
        if problem is not None:
            raise ConfigError(f"{where}.fields.{target}: {problem}")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not allowed")


def _parse_int(text: str) -> int:
    """A JSON integer; one too long for Python to read is refused with its size, not a traceback."""
    digits = len(text.lstrip("-"))
    if digits > INT_DIGITS_LIMIT:
        raise ValueError(f"a number of {digits:,} digits is far too large to be a figure")
    return int(text)


def parse_json(body: bytes, label: str, *, content_type: str | None = None) -> object:
    """The document in ``body``, or PermanentSourceError saying where it stops being JSON."""
    try:
        return json.loads(body, parse_constant=_reject_constant, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except UnicodeDecodeError as exc:
        problem = f"the body is not UTF-8 text ({exc.reason} at byte {exc.start})"
    except RecursionError:
        problem = "the document is nested too deeply"
    except ValueError as exc:
        problem = str(exc)
    hint = f" (Content-Type {content_type})" if content_type else ""
    raise PermanentSourceError(f"{label}: the body is not valid JSON{hint}: {problem}")


def resolve(doc: object, path: str) -> object:
    """The value at ``path``; PermanentSourceError saying which step is missing."""
    here: object = doc
    walked: list[str] = []
    for step in path.split("."):
        at = ".".join(walked) or "the top level"
        if isinstance(here, dict):
            if step not in here:
                _missing(path, f"{at!r} has no key {step!r}" if walked else f"no key {step!r}")
            here = here[step]
        elif isinstance(here, list):
            if not step.isdigit():
                _missing(path, f"{at!r} is a list, and {step!r} is not an index")
            index = int(step)
            if index >= len(here):
                _missing(path, f"{at!r} has only {count_of(len(here), 'item')}")
            here = here[index]
        else:
            kind = "null" if here is None else type(here).__name__
            _missing(path, f"{at!r} is {kind}, not an object or a list")
        walked.append(step)
    return here


def _missing(path: str, why: str) -> NoReturn:
    raise PermanentSourceError(f"JSON path {path!r} not found: {why}")


def tally_from_json(
    doc: object,
    count: Count,
    fields: FieldMap,
    states: StateValues,
    *,
    clock: Clock,
    source: str,
    label: str,
) -> Tally:
    """Read a tally out of a parsed JSON document with ``fields``."""

    def lookup(target: str, path: str) -> Found:
        try:
            value = resolve(doc, path)
        except PermanentSourceError as exc:
            raise PermanentSourceError(f"{target}: {exc}") from None
        return Found(value, f"JSON path {path!r}")

    return build_tally(
        count, fields, states, lookup, thousands=False, clock=clock, source=source, label=label
    )
