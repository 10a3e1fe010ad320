"""Field mappings: where each figure of a tally is found in a document, and how to read it.

A :class:`FieldMap` names a *locator* for every figure: a dotted JSON path for JSON documents
(``"results.0.count"``), a column header for CSV ``rows`` layouts, or a first-column key for CSV
``pairs`` layouts. The targets are ``votes.<choice id>`` for every choice of the count, and the
optional ``void``, ``challenged``, ``received``, ``state`` and ``sustained`` (challenges upheld).

In a config file the mapping is the ``fields`` table of a source::

    [counts.source.fields]
    votes.yes = "results.0.count"   # one entry per choice; defaults to the choice id itself
    votes.no = "results.1.count"
    void = "void"                   # optional: 0 when not mapped
    challenged = "challenged"       # optional: 0 when not mapped
    received = "received"           # optional: None (unknown) when not mapped
    state = "status"                # optional: "counting" when not mapped
    sustained = "sustained"         # optional: 0 when not mapped (challenges upheld)

and ``state_values`` maps the document's own words to tally states (matched trimmed and
case-insensitively; the state names ``counting``, ``paused`` and ``final`` are always known)::

    [counts.source.state_values]
    "in progress" = "counting"
    "recess" = "paused"
    "certified" = "final"

Reading rules, the same for every document kind:

* A mapped locator that is missing from the document is a
  :class:`~bot.errors.PermanentSourceError` naming the target and the locator.
* Figures are non-negative integers no larger than :data:`~bot.domain.model.MAX_FIGURE`. JSON
  accepts integers and strings of ASCII digits; CSV accepts digits with optional thousands
  separators (``"1,100"``). Anything else is a PermanentSourceError naming the target and the value
  (cut short), so a bad feed is a failed poll like any other.
* An empty value (JSON null or an empty string, a blank CSV cell) is an error for votes; for the
  optional targets it means "not given": ``void`` and ``challenged`` 0, ``received`` None,
  ``state`` counting.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from bot.base.clock import Clock
from bot.domain.model import MAX_FIGURE, Count, Tally, TallyState, figure_value
from bot.errors import ConfigError, PermanentSourceError

OPTIONAL_TARGETS = ("void", "challenged", "received", "state", "sustained")
"""The targets besides ``votes.<choice>``, in the order they are read."""

_DIGITS = re.compile(r"[0-9]+")
_THOUSANDS = re.compile(r"[0-9]{1,3}(,[0-9]{3})+")


@dataclass(frozen=True, slots=True)
class FieldMap:
    """Where each figure is found: ``votes`` maps choice id to locator; the rest are optional."""

    votes: Mapping[str, str]
    void: str | None = None
    challenged: str | None = None
    received: str | None = None
    state: str | None = None
    sustained: str | None = None

    @classmethod
    def default(cls, count: Count) -> FieldMap:
        """Votes for each choice under the choice's own id; nothing else mapped."""
        return cls(votes={c: c for c in count.choice_ids})

    def targets(self) -> Iterator[tuple[str, str]]:
        """Every mapped ``(target, locator)``, votes first, e.g. ``("votes.yes", "yes")``."""
        for choice, locator in self.votes.items():
            yield f"votes.{choice}", locator
        for name in OPTIONAL_TARGETS:
            locator = getattr(self, name)
            if locator is not None:
                yield name, locator

    def check(self, count: Count, where: str) -> None:
        """Raise ConfigError unless ``votes`` has exactly the count's choices."""
        unknown = [c for c in self.votes if c not in count.choice_ids]
        if unknown:
            raise ConfigError(
                f"{where}.fields.votes: unknown choice {unknown[0]!r} "
                f"(count {count.id!r} has choices {', '.join(map(repr, count.choice_ids))})"
            )
        missing = [c for c in count.choice_ids if c not in self.votes]
        if missing:
            raise ConfigError(f"{where}.fields.votes: no entry for choice {missing[0]!r}")
        for target, locator in self.targets():
            if not locator.strip():
                raise ConfigError(f"{where}.fields.{target}: the locator is empty")


def normalize_word(text: str) -> str:
    """How document words and column names are compared: trimmed, BOM dropped, casefolded."""
    return text.replace("\ufeff", "").strip().casefold()


class StateValues:
    """The document's words for tally states, e.g. ``StateValues({"certified": "final"})``.

    Words are compared trimmed and casefolded; values must be tally state names (ConfigError
    otherwise).
    """

    __slots__ = ("_words",)

    def __init__(self, words: Mapping[str, str] | None = None) -> None:
        self._words: dict[str, TallyState] = {}
        for word, state in (words or {}).items():
            key = normalize_word(word)
            if not key:
                raise ConfigError("state_values: a word is empty")
            try:
                value = TallyState(state)
            except ValueError:
                names = ", ".join(s.value for s in TallyState)
                raise ConfigError(
                    f"state_values.{word!r}: bad state value {state!r} (must be one of {names})"
                ) from None
            if self._words.get(key, value) != value:
                raise ConfigError(f"state_values: {word!r} is given twice with different states")
            self._words[key] = value

    @property
    def words(self) -> Mapping[str, TallyState]:
        """The normalized words and the states they stand for."""
        return dict(self._words)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StateValues) and other._words == self._words

    def __hash__(self) -> int:
        return hash(frozenset(self._words.items()))

    def __repr__(self) -> str:
        return f"StateValues({self._words!r})"

    def lookup(self, word: str) -> TallyState | None:
        """The state ``word`` stands for, or None when it is not known."""
        key = normalize_word(word)
        if key in self._words:
            return self._words[key]
        for state in TallyState:
            if key == state.value:
                return state
        return None

    def known(self) -> list[str]:
        """Every word :meth:`lookup` accepts, for error messages."""
        return sorted({*self._words, *(s.value for s in TallyState)})


@dataclass(frozen=True, slots=True)
class Found:
    """A raw value read from a document, with where it was found (for error messages)."""

    value: object
    origin: str


Lookup = Callable[[str, str], Found]
"""``lookup(target, locator)`` finds one value or raises PermanentSourceError naming both."""


def parse_figure(target: str, found: Found, *, thousands: bool) -> int | None:
    """A non-negative integer from a raw value; None for an empty value.

    ``thousands`` allows ``"1,100"`` (CSV). Booleans and floats are never figures.
    """
    value = found.value
    if value is None:
        return None
    if isinstance(value, bool):
        raise _bad_figure(target, found, "is not an integer")
    if isinstance(value, int):
        if value < 0:
            raise _bad_figure(target, found, "is negative")
        if value > MAX_FIGURE:
            raise _too_large(target, found)
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if _DIGITS.fullmatch(text) or (thousands and _THOUSANDS.fullmatch(text)):
            figure = figure_value(text.replace(",", ""))
            if figure is None:
                raise _too_large(target, found)
            return figure
        if text.startswith("-") and _DIGITS.fullmatch(text[1:].replace(",", "")):
            raise _bad_figure(target, found, "is negative")
        what = "a whole number like 1100 or 1,100" if thousands else "a whole number like 1100"
        raise _bad_figure(target, found, f"is not {what}")
    raise _bad_figure(target, found, "is not an integer")


def _bad_figure(target: str, found: Found, problem: str) -> PermanentSourceError:
    return PermanentSourceError(
        f"{target} ({found.origin}): {_shown(found.value)} {problem}; "
        "figures must be non-negative whole numbers"
    )


def _too_large(target: str, found: Found) -> PermanentSourceError:
    return PermanentSourceError(
        f"{target} ({found.origin}): {_shown(found.value)} is above the ceiling of "
        f"{MAX_FIGURE:,} for a figure"
    )


def _shown(value: object) -> str:
    """``repr(value)``, cut short: a 4,301-digit figure is not repeated whole in every log line."""
    if isinstance(value, int) and value > 10**40:
        return "a number of more than 40 digits"  # never str() it: it may be too long for that
    text = repr(value)
    if len(text) <= 48:
        return text
    return f"{text[:40]}... ({len(text):,} characters)"


def parse_state(found: Found, states: StateValues) -> TallyState | None:
    """The tally state a raw value names; None for an empty value."""
    value = found.value
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise PermanentSourceError(f"state ({found.origin}): {value!r} is not a string")
    state = states.lookup(value)
    if state is None:
        known = ", ".join(map(repr, states.known()))
        raise PermanentSourceError(
            f"state ({found.origin}): {value!r} is not a known state (known: {known}); "
            "add it to state_values"
        )
    return state


def build_tally(
    count: Count,
    fields: FieldMap,
    states: StateValues,
    lookup: Lookup,
    *,
    thousands: bool,
    clock: Clock,
    source: str,
    label: str,
) -> Tally:
    """Read every mapped figure through ``lookup`` and assemble the tally.

    Every PermanentSourceError raised on the way is prefixed with ``label`` (the URL or path).
    """
    try:
        return _assemble(
            count, fields, states, lookup, thousands=thousands, clock=clock, source=source
        )
    except PermanentSourceError as exc:
        raise PermanentSourceError(f"{label}: {exc}") from None


def _assemble(
    count: Count,
    fields: FieldMap,
    states: StateValues,
    lookup: Lookup,
    *,
    thousands: bool,
    clock: Clock,
    source: str,
) -> Tally:
    votes: dict[str, int] = {}
    for choice in count.choice_ids:
        target = f"votes.{choice}"
        found = lookup(target, fields.votes[choice])
        figure = parse_figure(target, found, thousands=thousands)
        if figure is None:
            raise PermanentSourceError(f"{target} ({found.origin}): the value is empty")
        votes[choice] = figure
    optional: dict[str, int | None] = {}
    for name in ("void", "challenged", "received", "sustained"):
        locator = getattr(fields, name)
        optional[name] = (
            None
            if locator is None
            else parse_figure(name, lookup(name, locator), thousands=thousands)
        )
    state = None
    if fields.state is not None:
        state = parse_state(lookup("state", fields.state), states)
    return Tally(
        count_id=count.id,
        votes=votes,
        observed_at=clock.now(),
        source=source,
        void=optional["void"] or 0,
        challenged=optional["challenged"] or 0,
        received=optional["received"],
        state=state or TallyState.COUNTING,
        sustained=optional["sustained"] or 0,
    )
