"""A verb's form, for a platform that has forms (a Discord modal, a Slack modal): its fields,
and the one command line their values make.

The form only gathers text: what was filled in becomes the SAME line a person would type
(``create local-7 title="Local 7 vote" choices="yes:Strike,no:No strike" tie=no``) and goes
through the core's handler, so its grammar, checks, authority and audit are the typed
command's. A field's value is put in double quotes where the line's grammar allows spaces in it
(:func:`bot.commands.count_line.settings_words`); the free fields (``rules``, ``figures``) are
``key=value`` words as typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Field:
    """One text field of a form."""

    key: str
    label: str
    """Shown above the field (at most 45 characters: Discord's limit)."""
    placeholder: str = ""
    """Shown in the empty field (at most 100 characters)."""
    required: bool = True
    most: int = 200
    """The most characters it takes."""
    covers: tuple[str, ...] = ()
    """The words of the line it fills in (``rule``, ``tie``): an error naming one of them is
    shown on this field, where the platform shows errors on fields."""


@dataclass(frozen=True, slots=True)
class Form:
    """A verb's form (``VerbSpec.form``): a title (at most 45 characters), up to 5 fields, and
    the command line their values make."""

    title: str
    fields: tuple[Field, ...]
    line: Callable[[Mapping[str, str]], str]

    def field_for(self, error: str) -> Field:
        """The field an error is about: the first whose words it names, else the first."""
        words = set(re.findall(r"[a-z]+", error.lower()))
        return next((f for f in self.fields if words & set(f.covers)), self.fields[0])

    def __post_init__(self) -> None:
        if not 0 < len(self.title) <= 45 or not 0 < len(self.fields) <= 5:
            raise ValueError(f"form {self.title!r}: a title of 1 to 45 characters, 1 to 5 fields")
        if any(len(f.label) > 45 or len(f.placeholder) > 100 for f in self.fields):
            raise ValueError(f"form {self.title!r}: labels of 45, placeholders of 100 at most")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _quoted(key: str, text: str) -> str:
    # The grammar's quotes cannot be escaped: a double quote typed in a field is dropped, as
    # the typed command drops it.
    return f'{key}="{_one_line(text).replace(chr(34), "")}"'


def create_line(values: Mapping[str, str]) -> str:
    """``create`` as typed, from the create form's values."""
    words = ["create", _one_line(values.get("count", ""))]
    for key in ("title", "choices"):
        if _one_line(values.get(key, "")):
            words.append(_quoted(key, values[key]))
    for key in ("rules", "figures"):
        words.append(_one_line(values.get(key, "")))
    return " ".join(w for w in words if w)


CREATE_FORM = Form(
    "New count",
    (
        Field("count", "Name (lowercase letters, digits, dashes)", "local-7", most=64),
        Field("title", "Title", "Local 7 strike vote", most=256, covers=("title",)),
        Field(
            "choices",
            "Choices (id:Label, comma-separated)",
            "yes:Strike,no:No strike",
            covers=("choices", "choice"),
        ),
        Field(
            "rules",
            "Rule, tie holder, threshold (optional)",
            "rule=majority tie=no threshold=2/3",
            required=False,
            covers=("rule", "tie", "threshold"),
        ),
        Field(
            "figures",
            "Ballots received, eligible (optional)",
            "received=412 eligible=450",
            required=False,
            covers=("received", "eligible"),
        ),
    ),
    create_line,
)
"""The form of ``create``."""
