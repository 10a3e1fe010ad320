"""The parts every table's model is made of: the base :class:`Table`, and the kinds of value a
table holds, each with the words a reader of the file gets when a value is wrong.

A key is one line in a model: ``timeout: Positive = 10.0``. The type says what is accepted
(TOML's own types, never coerced: ``"10"`` is text, not a number; ``true`` is not 1) and what is
said otherwise (``must be a number above 0, got "10" (text)``); see :mod:`bot.settings.problems`
for how pydantic's errors become ``FILE: KEY: PROBLEM`` lines. A check that spans keys is a
``model_validator(mode="after")`` that raises :func:`problems` at the keys concerned.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from enum import Enum
from typing import Annotated, ClassVar, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, PlainValidator, Strict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError
from yarl import URL

from bot.delivery.pacing import Window

Loc = tuple[str | int, ...]
E = TypeVar("E", bound=Enum)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "true/false"),
    (int, "an integer"),
    (float, "a number"),
    (str, "text"),
    ((list, tuple, set, frozenset), "a list"),
    (Mapping, "a table"),
)


class Table(BaseModel):
    """One table of the file: unknown keys are problems, values are read as TOML typed them, and
    the settings cannot change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    moved: ClassVar[Mapping[str, str]] = {}
    """Keys that moved elsewhere, old name to where they are now (``[discord] admin_users``):
    an old key is refused with a message naming its new place."""
    moved_why: ClassVar[str] = ""
    """Said after the new place of a moved key."""


class PlatformTable(Table):
    """The settings model of a platform's ``[name]`` table (``bot.platform.Plugin.settings``)."""

    def on(self) -> bool:
        """Whether the table turns the platform on (``[console] enabled = false`` does not)."""
        return True


# ------------------------------------------------------------------------------ words


def kind_of(value: object) -> str:
    """What ``value`` is, in TOML's words: ``text``, ``a table``, ``a list``, ..."""
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


# --------------------------------------------------------------------------- problems


def bad(problem: str) -> PydanticCustomError:
    """The problem of the value being checked, said as is (raise it from a validator)."""
    return PydanticCustomError("tallybot", "{problem}", {"problem": problem})


def problems(model: str, found: Sequence[tuple[Loc, str]]) -> None:
    """Raise every ``(where, problem)`` in ``found`` at once, ``where`` relative to the value
    being checked (``("source", "url")``); nothing when there is none."""
    if found:
        raise ValidationError.from_exception_data(
            model, [InitErrorDetails(type=bad(text), loc=loc, input=None) for loc, text in found]
        )


# ----------------------------------------------------------------------------- values

Text = Annotated[str, Strict()]
Whole = Annotated[int, Strict()]
Flag = Annotated[bool, Strict()]


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _not_empty(value: str) -> str:
    if not value.strip():
        raise bad("is empty")
    return value


Filled = Annotated[str, Strict(), AfterValidator(_not_empty)]
"""Text that is not empty (nor only spaces)."""


def _positive(value: object) -> float:
    n = _number(value)
    if n is None or not n > 0:
        raise bad(f"must be a number above 0, got {describe(value)}")
    if not math.isfinite(n):
        raise bad(f"must be a finite number, got {describe(value)}")
    return n


Positive = Annotated[float, PlainValidator(_positive)]
"""A finite number above 0 (an integer is a number)."""


def at_least(minimum: int) -> PlainValidator:
    """A whole number of at least ``minimum``."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise bad(f"must be a whole number of at least {minimum}, got {describe(value)}")
        return value

    return PlainValidator(check)


def between(low: float, high: float, what: str = "") -> PlainValidator:
    """A number from ``low`` to ``high`` (``what``: the unit, `` seconds``)."""

    def check(value: object) -> float:
        n = _number(value)
        if n is None or not math.isfinite(n) or not low <= n <= high:
            raise bad(f"must be {low:g} to {high:g}{what}, got {describe(value)}")
        return n

    return PlainValidator(check)


def whole_between(low: int, high: int) -> PlainValidator:
    """A whole number from ``low`` to ``high``."""

    def check(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise bad(f"must be a whole number from {low} to {high}, got {describe(value)}")
        return value

    return PlainValidator(check)


def one_of(options: Sequence[str], noun: str = "value") -> PlainValidator:
    """One of ``options``, with the closest suggested on a typo."""
    return PlainValidator(lambda value: _one_of(value, options, noun))


def enum_of(kind: type[E], noun: str = "value") -> PlainValidator:
    """The member of the enum ``kind`` whose value is given (``rule = "majority"``)."""
    options = [str(member.value) for member in kind]
    return PlainValidator(lambda value: kind(_one_of(value, options, noun)))


def _one_of(value: object, options: Sequence[str], noun: str) -> str:
    if not isinstance(value, str) or value not in options:
        close = suggest(value, options) if isinstance(value, str) else ""
        raise bad(f"unknown {noun} {describe(value)}{close}; one of {', '.join(options)}")
    return value


def _env_name(value: object) -> str:
    if not isinstance(value, str):
        raise bad(f"expected text, got {describe(value)}")
    if not ENV_NAME.fullmatch(value):
        raise bad(f"{value!r} is not an environment variable name")
    return value


EnvName = Annotated[str, PlainValidator(_env_name)]
"""The name of an environment variable (a secret is read from it, or from ``NAME_FILE``)."""


def _host(value: str) -> str:
    if not value.strip():
        raise bad('is empty (use "127.0.0.1", or "0.0.0.0" in a container)')
    return value


Host = Annotated[str, Strict(), AfterValidator(_host)]


def _port(value: int) -> int:
    if not 0 <= value <= 65535:
        raise bad(f"must be 0 to 65535 (0: any free port), got {value}")
    return value


Port = Annotated[int, Strict(), AfterValidator(_port)]


def _http_url(value: str) -> str:
    try:
        url = URL(value)
    except (ValueError, TypeError) as exc:
        raise bad(f"not a valid URL ({exc})") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise bad(f"must be an http:// or https:// address, got {describe(value)}")
    return value


HttpUrl = Annotated[str, Strict(), AfterValidator(_not_empty), AfterValidator(_http_url)]


LISTS = (list, tuple, set, frozenset)
"""What a list of the file is (a list), or of a model built in code (any collection)."""


def _ids(value: object) -> frozenset[str]:
    if not isinstance(value, LISTS):
        raise bad(f"expected a list, got {describe(value)}")
    found = [
        (i, v) for i, v in enumerate(value) if isinstance(v, bool) or not isinstance(v, str | int)
    ]
    problems("ids", [((i,), f"expected text or a number, got {describe(v)}") for i, v in found])
    return frozenset(str(v) for v in value)


Ids = Annotated[frozenset[str], PlainValidator(_ids)]
"""A list of ids, as text or numbers (``["123"]`` and ``[123]`` alike)."""


def _limits(value: object) -> Mapping[str, Window]:
    if not isinstance(value, Mapping):
        raise bad(f"expected a table, got {describe(value)}")
    out: dict[str, Window] = {}
    found: list[tuple[Loc, str]] = []
    for name, pair in value.items():
        ok = isinstance(pair, list) and len(pair) == 2
        n, seconds = pair if ok else (0, None)
        s = _number(seconds)
        if type(n) is int and n >= 1 and s is not None and math.isfinite(s) and s > 0:
            out[str(name)] = Window(n, s)
        else:
            found.append(((name,), "expected [requests, seconds], e.g. [50, 1.0]"))
    problems("limits", found)
    return out


Limits = Annotated[Mapping[str, Window], PlainValidator(_limits)]
"""A ``limits`` table: rate-limit buckets of the platform changed by name,
``"bucket name" = [requests, seconds]`` (``bot.delivery.pacing.Limits.with_windows``)."""
