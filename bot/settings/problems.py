"""Pydantic's errors, said as ``FILE: KEY: PROBLEM`` lines, in the order of the file.

:func:`lines` turns the errors of one check of the whole document into one line per problem:
the key as written in TOML (``counts[0].source.timeout``), what is wrong in words a reader of
the file knows (``expected text, got 5 (an integer)``, ``unknown key (did you mean
'interval'?)``), sorted by where the key is in the file (a missing key at the end of its
table). :class:`Problems` gathers the lines of one file, with those a later check adds (the
machine's: files, variables, secrets), each once.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from bot.errors import ConfigError
from bot.settings.values import Table, describe, suggest, toml_key

T = TypeVar("T")
_MISSING = object()
_EXPECTED = {
    "string_type": "text",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "bool_type": "true/false",
    "float_type": "a number",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "frozen_set_type": "a list",
    "dict_type": "a table",
    "mapping_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dataclass_type": "a table",
}
"""The errors of a value of the wrong TOML type, and the type that was expected."""
_SECRET_WORDS = ("token", "secret", "password", "passwd")
"""An unknown key with one of these in its name is someone's attempt to write a secret here."""


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


@dataclass(frozen=True, slots=True)
class _Where:
    key: str
    """The key as written in the file: ``counts[0].source.timeout``."""
    order: tuple[int, ...]
    """Where it is in the file: the position of each key in its table, each index in its list."""
    table: type[Table] | None
    """The model of the table the key is in (None: the key is not a table's)."""
    field: FieldInfo | None
    value: object


def lines(
    errors: Sequence[ErrorDetails], model: type[BaseModel], raw: object, path: Path
) -> list[str]:
    """One ``FILE: KEY: PROBLEM`` line for each of pydantic's ``errors`` (of ``raw`` checked
    against ``model``), in file order."""
    found = []
    for n, detail in enumerate(errors):
        where = _locate(model, raw, detail["loc"])
        at = f"{where.key}: " if where.key else ""
        found.append((where.order, n, f"{path}: {at}{_say(detail, where)}"))
    return list(dict.fromkeys(text for *_, text in sorted(found)))


def _say(detail: ErrorDetails, where: _Where) -> str:
    kind = detail["type"]
    loc = detail["loc"]
    key = str(loc[-1]) if loc else ""
    if kind == "tallybot":
        return detail["msg"]
    if kind == "missing":
        examples = where.field.examples if where.field is not None else None
        return f"missing (e.g. {examples[0]})" if examples else "missing"
    if kind == "extra_forbidden" and where.table is not None:
        return _unknown(key, where.table)
    if kind in _EXPECTED:
        expected = _EXPECTED[kind]
        if expected == "a list" and isinstance(where.value, Mapping):
            return (
                f"expected a list, got a table: write each entry as [[{key}]] "
                f"(two brackets), not [{key}]"
            )
        return f"expected {expected}, got {describe(where.value)}"
    if kind == "finite_number":
        return f"expected a finite number, got {describe(where.value)}"
    said = detail["msg"]
    return said[:1].lower() + said[1:]


def _unknown(key: str, table: type[Table]) -> str:
    if key in table.moved:
        return f"no longer here (did you mean {table.moved[key]}?{table.moved_why})"
    known = [info.alias or name for name, info in table.model_fields.items()]
    close = suggest(key, known)
    if not close and any(word in key.casefold() for word in _SECRET_WORDS):
        return (
            "unknown key: secrets never go in the file; they are read from the environment, or "
            "from a file named by NAME_FILE (see tallybot.env.example)"
        )
    return f"unknown key{close or '; known keys: ' + ', '.join(known)}"


def _locate(model: type[BaseModel], raw: object, loc: Sequence[str | int]) -> _Where:
    """Follow ``loc`` through the models and the document together."""
    tp: Any = model
    node: object = raw
    parts: list[str] = []
    order: list[int] = []
    table: type[Table] | None = None
    field: FieldInfo | None = None
    for step in loc:
        tp = _unwrap(tp)
        tagged = _tag_of(_models_of(tp), step) if isinstance(step, str) else None
        if tagged is not None:
            tp = tagged  # a discriminated union's tag: not in the file
            continue
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            table = tp if issubclass(tp, Table) else None
            field = tp.model_fields.get(step) if isinstance(step, str) else None
            tp = field.annotation if field is not None else Any
        else:
            table, field = None, None
            args = [a for a in typing.get_args(tp) if a is not Ellipsis]
            tp = args[-1] if args else Any
        if isinstance(step, int):
            parts.append(f"[{step}]")
            order.append(step)
            node = node[step] if isinstance(node, list) and 0 <= step < len(node) else _MISSING
        else:
            parts.append(f".{toml_key(step)}" if parts else toml_key(step))
            keys = list(node) if isinstance(node, Mapping) else []
            order.append(keys.index(step) if step in keys else len(keys))
            node = node[step] if isinstance(node, Mapping) and step in node else _MISSING
    return _Where("".join(parts), tuple(order), table, field, node)


def _unwrap(tp: Any) -> Any:
    """``X`` of ``Annotated[X, ...]`` and of ``X | None``."""
    while True:
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif _is_union(tp):
            rest = [a for a in typing.get_args(tp) if a is not type(None)]
            if len(rest) != 1:
                return tp
            tp = rest[0]
        else:
            return tp


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _models_of(tp: Any) -> list[type[BaseModel]]:
    if not _is_union(tp):
        return []
    return [a for a in typing.get_args(tp) if isinstance(a, type) and issubclass(a, BaseModel)]


def _tag_of(members: list[type[BaseModel]], tag: str) -> type[BaseModel] | None:
    """The member of a discriminated union whose ``Literal`` tag is ``tag``."""
    for member in members:
        for info in member.model_fields.values():
            if typing.get_origin(info.annotation) is typing.Literal and tag in typing.get_args(
                info.annotation
            ):
                return member
    return None
