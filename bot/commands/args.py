"""The kinds of argument a verb takes, each knowing its grammar, its usage and its slash options.

A verb's spec (:mod:`bot.commands.verbs`) lists its arguments in order; the text grammar hands
each the words left after the verb (:meth:`Arg.take`), and a platform with typed options (a
Discord slash command) asks each for its options (:meth:`Arg.options`) and turns the values it
gets back into the same words (:meth:`Arg.words`), which the grammar then checks like a typed
line. Kinds:

- :class:`CountArg`: a count's id (one word; autocompleted where the platform can);
- :class:`ChoiceArg`: one word out of a few, each with a label (``events|all|live``);
- :class:`FiguresArg`: ``name=number`` figures, plus optional named whole numbers
  (``void``, ``challenged``, ``received``) that typed options give one by one;
- :class:`TextArg`: the rest of the line as free text (a title, an ``@user``);
- :class:`SettingsArg`: ``key=value`` pairs of text, from a known set of keys;
- :class:`bot.commands.hearing.WantsArg`: what a subscription hears and its options.

A verb takes at most one argument of each kind: the parsed :class:`Command` has one field for
each.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from bot.domain.model import CEILING_RULE, figure_value
from bot.domain.subscription import Wants
from bot.errors import CommandError

NUMBER = re.compile(r"^[0-9]{1,3}(,[0-9]{3})+$|^[0-9]+$")
"""A figure: ASCII digits only (``\\d`` would take any script's digits), optionally ``1,100``."""
FIGURE_KEYS = ("void", "challenged", "sustained", "received")
"""Figures every count has besides its choices."""

Value = str | int | None
"""What a typed option holds (None: not given)."""


@dataclass(frozen=True, slots=True)
class Command:
    """One command as parsed: the verb's name and what each of its arguments took."""

    verb: str
    count: str | None = None
    choice: str | None = None
    figures: tuple[tuple[str, int], ...] = ()
    text: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    wants: Wants | None = None
    """What a subscription hears (``bot.commands.hearing``); its ``mention`` as typed."""


class OptionKind(StrEnum):
    TEXT = "text"
    COUNT = "count"
    """Text naming a count: a platform that can autocomplete offers the count ids."""
    NUMBER = "number"
    """A whole number, at least 0."""


@dataclass(frozen=True, slots=True)
class Option:
    """One typed option of a verb, for a platform whose commands have them."""

    name: str
    description: str
    kind: OptionKind = OptionKind.TEXT
    required: bool = False
    choices: tuple[tuple[str, str], ...] = ()
    """(label, value) pairs, when only these values may be given."""


class Arg(ABC):
    """One argument of a verb (see the module docstring)."""

    name: str

    @property
    @abstractmethod
    def usage(self) -> str:
        """How the argument is written in a usage line (``<count>``, ``[events|all|live]``)."""

    @abstractmethod
    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        """The command with this argument's value from the first of ``words``, and the words
        left; a :class:`CommandError` (ending in ``usage`` where it helps) when they are wrong."""

    @abstractmethod
    def options(self) -> tuple[Option, ...]:
        """Its typed options."""

    @abstractmethod
    def words(self, values: Mapping[str, Value]) -> list[str]:
        """The words typed options describe (``values`` by option name), for :meth:`take`."""


@dataclass(frozen=True, slots=True)
class CountArg(Arg):
    description: str = "The count"
    required: bool = True
    name: str = "count"
    existing: bool = True
    """Names a count that exists (offered as one types); ``False``: a new count's name."""

    @property
    def usage(self) -> str:
        return "<count>" if self.required else "[count]"

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        if not words:
            if self.required:
                raise CommandError(f"which count? {usage}")
            return command, words
        return replace(command, count=words[0].lower()), words[1:]

    def options(self) -> tuple[Option, ...]:
        kind = OptionKind.COUNT if self.existing else OptionKind.TEXT
        return (Option(self.name, self.description, kind, self.required),)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        if given is None:
            return []
        count = str(given).strip()
        if not count or any(ch.isspace() for ch in count):
            hint = (
                "pick one from the list that appears as you type"
                if self.existing
                else "lowercase letters, digits and dashes"
            )
            raise CommandError(f"{given!r} is not a count name (they have no spaces): {hint}")
        return [count]


@dataclass(frozen=True, slots=True)
class Choice:
    value: str
    label: str
    """How a menu shows it (a slash option's choice)."""
    meaning: str
    """What it means, in the error that lists the choices."""


@dataclass(frozen=True, slots=True)
class ChoiceArg(Arg):
    name: str
    choices: tuple[Choice, ...]
    default: str
    description: str

    @property
    def usage(self) -> str:
        return f"[{'|'.join(c.value for c in self.choices)}]"

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        if not words:
            return replace(command, choice=self.default), words
        word = words[0].lower()
        if word not in {c.value for c in self.choices}:
            each = [f"{c.value} ({c.meaning})" for c in self.choices]
            listed = ", ".join(each[:-1]) + f" or {each[-1]}" if len(each) > 1 else each[0]
            raise CommandError(f"unknown {self.name} {words[0]!r}: use {listed}")
        return replace(command, choice=word), words[1:]

    def options(self) -> tuple[Option, ...]:
        pairs = tuple((c.label, c.value) for c in self.choices)
        return (Option(self.name, self.description, choices=pairs),)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        return [] if given is None else [str(given)]


@dataclass(frozen=True, slots=True)
class NamedNumber:
    """A figure a typed option gives on its own (``received``), written ``name=N``."""

    name: str
    description: str


FIGURES_HELP = "Figures per choice as name=number, e.g. yes=463 no=1100"
NAMED_FIGURES = (
    NamedNumber("void", "Void ballots"),
    NamedNumber("challenged", "Challenged ballots"),
    NamedNumber("received", "Ballots received in all"),
)


@dataclass(frozen=True, slots=True)
class FiguresArg(Arg):
    example: str
    """The usage's figures, e.g. ``yes=463 no=1100 [void=N]``."""
    required: bool = True
    named: tuple[NamedNumber, ...] = NAMED_FIGURES
    description: str = FIGURES_HELP
    name: str = "figures"

    @property
    def usage(self) -> str:
        return self.example

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        if self.required and not words:
            raise CommandError(f"no figures given; {usage}")
        return replace(command, figures=parse_figures(words, usage)), []

    def options(self) -> tuple[Option, ...]:
        numbers = tuple(Option(n.name, n.description, OptionKind.NUMBER) for n in self.named)
        return (Option(self.name, self.description), *numbers)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        found: list[str] = []
        given = values.get(self.name)
        if given is not None:
            text = re.sub(r"\s*=\s*", "=", str(given))  # "yes = 463" -> "yes=463"
            text = re.sub(r"[;]|,(?=\s)", " ", text)  # "yes=463, no=1,100" -> "yes=463  no=1,100"
            found.extend(text.split())
        for named in self.named:
            value = values.get(named.name)
            if value is not None:
                found.append(f"{named.name}={value}")
        return found


@dataclass(frozen=True, slots=True)
class TextArg(Arg):
    """The rest of the line, as typed (single spaces between its words)."""

    name: str
    description: str
    required: bool = True

    @property
    def usage(self) -> str:
        return f"<{self.name}>" if self.required else f"[{self.name}]"

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        if self.required and not words:
            raise CommandError(f"no {self.name} given; {usage}")
        return replace(command, text=" ".join(words) or None), []

    def options(self) -> tuple[Option, ...]:
        return (Option(self.name, self.description, required=self.required),)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        return [] if given is None else str(given).split()


@dataclass(frozen=True, slots=True)
class SettingsArg(Arg):
    """``key=value`` pairs (values are text without spaces) for the keys in ``keys``, wherever
    they are on the line; the other words are left for the arguments after it (a title)."""

    keys: tuple[str, ...]
    description: str
    name: str = "settings"

    @property
    def usage(self) -> str:
        return " ".join(f"[{k}=...]" for k in self.keys)

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        seen: dict[str, str] = {}
        rest: list[str] = []
        for word in words:
            key, sep, value = word.partition("=")
            key = key.lower()
            if not sep or key not in self.keys:
                rest.append(word)
                continue
            if key in seen:
                raise CommandError(f"{key} is given twice")
            seen[key] = value
        return replace(command, settings=tuple(seen.items())), rest

    def options(self) -> tuple[Option, ...]:
        return (Option(self.name, self.description),)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        return [] if given is None else str(given).split()


def parse_figures(words: list[str], usage: str) -> tuple[tuple[str, int], ...]:
    """``yes=463 no=1,100`` -> ``(("yes", 463), ("no", 1100))``; choices are checked later."""
    seen: dict[str, int] = {}
    for word in words:
        key, sep, raw = word.partition("=")
        key = key.strip().lower()
        if not sep or not key:
            raise CommandError(f"{_shown(word)!r} is not a figure: write name=number; {usage}")
        key, raw = _shown(key), raw.strip()
        if raw.startswith("-"):
            raise CommandError(f"{key}={_shown(raw)}: figures cannot be negative")
        if not NUMBER.match(raw):
            raise CommandError(f"{key}={_shown(raw)}: not a whole number (write e.g. {key}=1100)")
        value = figure_value(raw.replace(",", ""))
        if value is None:
            raise CommandError(f"{key} is too large: {CEILING_RULE}")
        if key in seen:
            raise CommandError(f"{key} is given twice")
        seen[key] = value
    return tuple(seen.items())


def _shown(text: str, most: int = 40) -> str:
    """``text`` as typed, cut short: an error echoes what was typed, not all of it."""
    return text if len(text) <= most else f"{text[: most - 4]}..."
