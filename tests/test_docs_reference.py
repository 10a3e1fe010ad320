"""The documentation's reference against the code: what the code has, the reference names.

Every list here is read from the code, never copied: the verbs from the verb table
(``bot.commands.builtin.VERBS``, with each verb's literal words from its usage and options), the
configuration keys from the settings models (``bot.settings``, and the table of every platform
registered in ``pyproject.toml``), the subcommands of ``tallybot`` from its parser, the metrics
from a fresh registry, the text limits from ``bot.domain.limits``. So a new verb, key, subcommand,
metric or limit fails here until its reference page has it, in the place a reader looks:

* ``docs/reference/commands.md``: a row of a table whose first cell starts with the verb, naming
  every literal word of its usage (``[undo]``, ``close=``, ``here``); ``tallybot NAME`` for each
  subcommand;
* ``docs/reference/configuration.md``: under the table's heading (``## [server]``,
  ``## [[counts]]``, ``### [counts.source.fields]``), a row whose first cell is the key;
* ``docs/reference/metrics.md``: a row whose first cell starts with the metric's name;
* ``docs/reference/limits.md``: a row naming the constant and its value.

``make docs`` builds the site with ``mkdocs build --strict`` (no broken link, no page left out).
"""

from __future__ import annotations

import argparse
import importlib
import re
import tomllib
import typing
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.commands.builtin import VERBS
from bot.commands.verbs import VerbSpec
from bot.domain import limits
from bot.domain.model import MAX_FIGURE
from bot.ops.metrics import Metrics
from bot.platform import Plugin, Plugins
from bot.settings.document import document_model
from bot.settings.values import Table

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _load(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _plugins() -> Plugins:
    """Every platform ``pyproject.toml`` registers (this checkout's, installed or not)."""
    found = PYPROJECT["project"]["entry-points"]["tallybot.adapters"]
    plugins = [_load(ref) for ref in found.values()]
    assert all(isinstance(p, Plugin) for p in plugins)
    return Plugins(plugins)


def _cells(line: str) -> list[str]:
    """A table row's cells: split at the pipes outside code spans, as Python-Markdown does
    (``| `admins add|remove` | ... |`` is two cells)."""
    cells, cell, code = [], "", False
    for char in line.strip().removeprefix("|").removesuffix("|"):
        if char == "`":
            code = not code
        if char == "|" and not code:
            cells.append(cell.strip())
            cell = ""
        else:
            cell += char
    return [*cells, cell.strip()]


def _rows(text: str) -> list[list[str]]:
    """The cells of every table row (not the header's rule) in ``text``."""
    return [
        _cells(line)
        for line in text.splitlines()
        if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line)
    ]


def _sections(text: str) -> dict[str, str]:
    """Each heading's text, without its hashes, to what follows it up to the next heading."""
    out: dict[str, str] = {}
    heading = ""
    for line in text.splitlines():
        m = re.match(r"^#{1,6} (.+)$", line)
        if m:
            heading = m.group(1).strip()
            out.setdefault(heading, "")
        else:
            out[heading] = out.get(heading, "") + line + "\n"
    return out


def _word(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text) is not None


# Commands ------------------------------------------------------------------------------------


def _literal_words(spec: VerbSpec) -> set[str]:
    """The words of a verb that a person types as they are: each ``key=`` of its usage, each
    word in its usage's brackets that is not an argument's name (``[undo]``, not ``[title]``),
    each value an option offers (``here``, ``off``)."""
    placeholders = {option.name for option in spec.options()}
    words = set(re.findall(r"(?<![\w-])([a-z_]+)=(?![0-9])", spec.usage))  # not yes=463
    for group in re.findall(r"\[([a-z_|]+)\]", spec.usage):
        words |= set(group.split("|")) - placeholders
    for option in spec.options():
        words |= {str(value) for _, value in option.choices}
    return words


def _verb_rows(name: str) -> list[str]:
    text = (REFERENCE / "commands.md").read_text()
    return [
        " | ".join(cells)
        for cells in _rows(text)
        if re.match(rf"^`{re.escape(name)}(?:[ `]|$)", cells[0])
    ]


@pytest.mark.parametrize("spec", list(VERBS), ids=lambda spec: str(spec.name))
def test_every_verb_has_its_row_with_its_words(spec: VerbSpec) -> None:
    name = str(spec.name)
    rows = _verb_rows(name)
    assert rows, f"docs/reference/commands.md: no row for the verb {name!r} ({spec.usage})"
    missing = sorted(w for w in _literal_words(spec) if not any(_word(w, row) for row in rows))
    assert not missing, (
        f"docs/reference/commands.md: the row of {name!r} does not name {missing} "
        f"(usage: {spec.usage})"
    )


def test_the_literal_words_are_read_from_the_code() -> None:
    """The words the rows are held to (a check of the check, on verbs that have them)."""
    assert {"events", "all", "live", "final", "calls", "leads", "close", "mention", "thread"} <= (
        _literal_words(VERBS["subscribe"])
    )
    assert {"show", "here", "off"} <= _literal_words(VERBS["alerts"])
    assert "title" not in _literal_words(VERBS["create"])  # an argument's name, not a word


def _subcommands() -> list[str]:
    main = PYPROJECT["project"]["scripts"]["tallybot"]
    module = importlib.import_module(main.partition(":")[0])
    parser: argparse.ArgumentParser = module.build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def test_every_subcommand_of_tallybot_is_in_the_commands_reference() -> None:
    text = (REFERENCE / "commands.md").read_text()
    names = _subcommands()
    assert {"run", "check-config", "push"} <= set(names)
    missing = [name for name in names if not _word(f"tallybot {name}", text)]
    assert not missing, f"docs/reference/commands.md: no `tallybot NAME` line for {missing}"


# Configuration -------------------------------------------------------------------------------


def _tables(annotation: Any) -> Iterator[tuple[type[Table], bool]]:
    """The tables an annotation holds, each with whether it is a list of them (``[[counts]]``)."""
    if isinstance(annotation, type) and issubclass(annotation, Table):
        yield annotation, False
        return
    many = typing.get_origin(annotation) in (tuple, list)
    for arg in typing.get_args(annotation):
        for table, inner in _tables(arg):
            yield table, many or inner


def _keys(model: type[BaseModel], path: str, out: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each table's heading (``[server]``, ``[[counts]]``, ``[counts.source]``) to its keys; a
    key that takes one of several models (a source's ``kind``) has the keys of them all."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        dotted = f"{path}.{key}" if path else key
        for table, many in _tables(field.annotation):
            heading = f"[[{dotted}]]" if many and not path else f"[{dotted}]"
            out.setdefault(heading, set()).update(
                f.alias or n for n, f in table.model_fields.items()
            )
            _keys(table, dotted, out)
    return out


def configuration_keys() -> dict[str, set[str]]:
    return _keys(document_model(_plugins()), "", {})


def test_the_keys_are_read_from_the_models() -> None:
    keys = configuration_keys()
    assert {"[store]", "[server]", "[[counts]]", "[counts.source]", "[discord]"} <= set(keys)
    assert {"host", "port", "push_secret_env"} <= keys["[server]"]
    assert {"url", "path", "speed", "layout", "headers_from_env"} <= keys["[counts.source]"]


@pytest.mark.parametrize("heading", sorted(configuration_keys()))
def test_every_configuration_key_is_under_its_tables_heading(heading: str) -> None:
    sections = _sections((REFERENCE / "configuration.md").read_text())
    section = next((text for title, text in sections.items() if heading in title.split()), None)
    assert section is not None, f"docs/reference/configuration.md: no heading `## {heading}`"
    documented = {cells[0] for cells in _rows(section)}
    missing = sorted(key for key in configuration_keys()[heading] if f"`{key}`" not in documented)
    assert not missing, (
        f"docs/reference/configuration.md: under {heading}, no row for {missing} "
        "(a row whose first cell is the key in backquotes)"
    )


# Metrics and limits --------------------------------------------------------------------------


def test_every_metric_has_its_row() -> None:
    rows = _rows((REFERENCE / "metrics.md").read_text())
    names = []
    for metric in Metrics().registry.collect():
        names.append(metric.name + ("_total" if metric.type == "counter" else ""))
    assert "tallybot_polls_total" in names
    missing = [n for n in names if not any(re.match(rf"^`{n}[{{`]", r[0]) for r in rows)]
    assert not missing, f"docs/reference/metrics.md: no row for {missing}"


def _ceilings() -> Mapping[str, int]:
    found = {n: v for n, v in vars(limits).items() if n.startswith("MAX_") and type(v) is int}
    return {**found, "MAX_FIGURE": MAX_FIGURE}


def test_every_limit_is_in_the_limits_reference_with_its_value() -> None:
    rows = [" | ".join(cells) for cells in _rows((REFERENCE / "limits.md").read_text())]
    ceilings = _ceilings()
    assert {"MAX_TITLE", "MAX_CHOICES", "MAX_FIGURE"} <= set(ceilings)
    wrong = [
        f"{name} = {value:,}"
        for name, value in ceilings.items()
        if not any(f"`{name}`" in row and _word(f"{value:,}", row) for row in rows)
    ]
    assert not wrong, f"docs/reference/limits.md: no row naming {wrong}"
