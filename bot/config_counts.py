"""The ``[[counts]]`` tables of the configuration, and the ``[defaults]`` they fall back on.

Part of the one pass of :mod:`bot.config` over the file: every problem is recorded as
``FILE: KEY: PROBLEM`` and the count is kept as far as it could be read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import tzinfo
from enum import Enum
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from bot.config_reader import Reader as _Reader
from bot.config_reader import Recorded, describe, suggest
from bot.domain.model import (
    CEILING_RULE,
    MAX_FIGURE,
    SLUG,
    Choice,
    Count,
    CountStatus,
    DecisionRule,
    RuleKind,
)
from bot.domain.times import zone_named
from bot.errors import ConfigError

E = TypeVar("E", bound=Enum)

MIN_INTERVAL = 1.0
MAX_INTERVAL = 86_400.0
DEFAULT_INTERVAL = 15.0
MANUAL: Mapping[str, Any] = {"kind": "manual"}
MAX_STALE_MINUTES = 10_080
"""A week: a source silent for longer than that is stale whatever the setting."""


@dataclass(frozen=True, slots=True)
class CountConfig:
    count: Count
    source: Mapping[str, Any]
    interval: float = DEFAULT_INTERVAL
    stale_after_failures: int = 5
    stale_after_seconds: float = 600.0


def check_defaults(defaults: _Reader) -> None:
    """Report ``[defaults]`` problems once, before the counts that use them (a count whose only
    problem is a default is still read, with the built-in default)."""
    none = _Reader(defaults.path, "", {}, [], defaults.problems)
    for check in (_interval, _failures, _stale_seconds):
        defaults.problems.attempt(partial(check, none, defaults), None)


def read_counts(top: _Reader, defaults: _Reader) -> tuple[CountConfig, ...]:
    counts: list[CountConfig] = []
    for i, raw in enumerate(top.get("counts", list, [])):
        cc = top.problems.attempt(partial(_count, top.path, i, raw, defaults), None)
        if cc is not None:
            counts.append(cc)
    seen: set[str] = set()
    for i, cc in enumerate(counts):
        if cc.count.id in seen:
            top.problems.add(f"{top.path}: counts[{i}].id: {cc.count.id!r} is used twice")
        seen.add(cc.count.id)
    return tuple(counts)


def read_timezone(defaults: _Reader) -> tzinfo | None:
    name = defaults.get("timezone", str)
    if name is None:
        return None
    try:
        return zone_named(name)
    except ValueError as exc:
        raise defaults.error("timezone", str(exc)) from None


def _count(path: Path, i: int, raw: Any, defaults: _Reader) -> CountConfig:
    where = f"counts[{i}]"
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: {where}: expected a table, got {describe(raw)}")
    p = defaults.problems
    before = len(p.items)
    r = _Reader(
        path,
        where,
        raw,
        [
            "id", "title", "choices", "rule", "tie_holder", "threshold", "eligible", "received",
            "status", "interval", "stale_after_failures", "stale_after_minutes", "source",
        ],
        p,
    )  # fmt: skip
    count_id = p.attempt(lambda: _count_id(r), "")
    title: str = p.attempt(lambda: r.need("title", str), "")
    choices: list[Choice] = p.attempt(lambda: _choices(r), [])
    kind = p.attempt(lambda: _enum(r, "rule", RuleKind, RuleKind.MAJORITY), RuleKind.MAJORITY)
    threshold = p.attempt(lambda: _threshold(r), None)
    status = p.attempt(
        lambda: _enum(r, "status", CountStatus, CountStatus.COUNTING), CountStatus.COUNTING
    )
    tie_holder, eligible, received = (
        r.get("tie_holder", str),
        p.attempt(lambda: _figure(r, "eligible"), None),
        p.attempt(lambda: _figure(r, "received"), None),
    )
    if eligible is not None and received is not None and received > eligible:
        p.attempt(lambda: _over_eligible(r, received, eligible), None)
    interval = p.attempt(lambda: _interval(r, defaults), DEFAULT_INTERVAL)
    source = p.attempt(lambda: _source(r), MANUAL)
    failures = p.attempt(lambda: _failures(r, defaults), 5)
    stale_seconds = p.attempt(lambda: _stale_seconds(r, defaults), 600.0)
    if len(p.items) > before:
        raise Recorded(f"{path}: {where}: has problems")
    try:
        count = Count(
            id=count_id,
            title=title,
            choices=tuple(choices),
            rule=DecisionRule(kind, tie_holder, threshold),
            eligible=eligible,
            received=received,
            status=status,
        )
    except ConfigError as exc:
        raise ConfigError(f"{path}: {where}: {exc}") from None
    return CountConfig(count, source, interval, failures, stale_seconds)


def _count_id(r: _Reader) -> str:
    count_id: str = r.need("id", str)
    if not SLUG.match(count_id):
        raise r.error(
            "id",
            f"{describe(count_id)} is not a lowercase slug like 'bessemer-2021' "
            "(letters, digits and dashes, at most 64)",
        )
    return count_id


def _choices(r: _Reader) -> list[Choice]:
    choices = []
    for j, c in enumerate(r.need("choices", list)):
        if (
            not isinstance(c, dict)
            or set(c) - {"id", "label"}
            or not isinstance(c.get("id"), str)
            or not isinstance(c.get("label", ""), str)
        ):
            raise r.error(f"choices[{j}]", 'expected { id = "yes", label = "Yes" }')
        choices.append(Choice(c["id"], str(c.get("label", c["id"]))))
    return choices


def _enum(r: _Reader, key: str, kind: type[E], default: E) -> E:
    name = r.get(key, str, default.value)
    try:
        return kind(name)
    except ValueError:
        names = [k.value for k in kind]
        raise r.error(
            key, f"unknown {key} {describe(name)}{suggest(name, names)}; one of {', '.join(names)}"
        ) from None


def _threshold(r: _Reader) -> Fraction | None:
    if "threshold" not in r.table:
        return None
    value = r.get("threshold", (str, int, float))
    try:
        return None if value is None else Fraction(str(value))
    except (ValueError, ZeroDivisionError):
        raise r.error("threshold", 'expected a fraction like "2/3"') from None


def _setting(r: _Reader, defaults: _Reader, key: str) -> tuple[_Reader, Any]:
    """The count's own ``key``, else the one in ``[defaults]``; and the table it came from."""
    at = r if key in r.table else defaults
    return at, at.get(key, (int, float))


def _interval(r: _Reader, defaults: _Reader) -> float:
    at, value = _setting(r, defaults, "interval")
    if value is None:
        return DEFAULT_INTERVAL
    if not math.isfinite(value) or not MIN_INTERVAL <= value <= MAX_INTERVAL:
        raise at.error(
            "interval", f"must be {MIN_INTERVAL:g} to {MAX_INTERVAL:g} seconds, got {value!r}"
        )
    return float(value)


def _failures(r: _Reader, defaults: _Reader) -> int:
    at, value = _setting(r, defaults, "stale_after_failures")
    if value is None:
        return 5
    if not isinstance(value, int) or value < 1:
        raise at.error(
            "stale_after_failures", f"must be a whole number of at least 1, got {value!r}"
        )
    return value


def _stale_seconds(r: _Reader, defaults: _Reader) -> float:
    at, value = _setting(r, defaults, "stale_after_minutes")
    if value is None:
        return 600.0
    if not (math.isfinite(value) and 0 < value <= MAX_STALE_MINUTES):
        raise at.error(
            "stale_after_minutes", f"must be above 0 and at most {MAX_STALE_MINUTES}, got {value!r}"
        )
    return float(value) * 60


def _source(r: _Reader) -> Mapping[str, Any]:
    source: Mapping[str, Any] = r.get("source", dict, {"kind": "manual"})
    if "kind" not in source:
        raise r.error("source.kind", "is required (http_json, http_csv, file, manual, replay)")
    return source


def _figure(r: _Reader, key: str) -> int | None:
    """A figure of the config (``eligible``, ``received``): under the one ceiling, MAX_FIGURE."""
    value: int | None = r.get(key, int)
    if value is not None and value > MAX_FIGURE:
        raise r.error(key, f"{value:,} is above the ceiling: {CEILING_RULE}")
    return value


def _over_eligible(r: _Reader, received: int, eligible: int) -> None:
    raise r.error(
        "received", f"{received:,} received is more than the {eligible:,} eligible voters"
    )
