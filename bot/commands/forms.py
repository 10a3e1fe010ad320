"""A verb's form, for a platform that has forms (a Discord modal, a Slack modal): its fields,
the values they open with, and the one command line their values make.

The form only gathers text: what was filled in becomes the SAME line a person would type
(``create local-7 title="Local 7 vote" choices="yes:Strike,no:No strike" tie=no``) and goes
through the core's handler, so its grammar, checks, authority and audit are the typed
command's. A field's value is put in double quotes where the line's grammar allows spaces in it
(:func:`bot.commands.count_line.settings_words`); the free fields (``rules``, ``figures``) are
``key=value`` words as typed.

A form is opened through the core: the adapter hands it the verb (and the count a count's form
is for) as a request that asks for the form (``Request.form``); the core checks it as it would
the command (the count must be one the person may see and administer) and answers with an
:class:`Opening`: the form, the count, and what its fields show (``Form.initial``: the count's
current values). The adapter shows it and, on submit, makes its line (:meth:`Opening.line`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from bot.domain.model import Count

FIELD_MOST = 3000
"""The most characters a field may take on every platform (Slack 3000, Discord 4000)."""


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


Initial = Callable[[Count, str | None], Mapping[str, str]]
"""A count (and its chat source as the store keeps it) as the values of a form's fields."""


@dataclass(frozen=True, slots=True)
class Form:
    """A verb's form (``VerbSpec.form``): a title (at most 45 characters), up to 5 fields, the
    command line their values make (given the form as opened), and, for a form about a count
    the verb names, the values it opens with."""

    title: str
    fields: tuple[Field, ...]
    line: Callable[[Opening, Mapping[str, str]], str]
    initial: Initial | None = None
    """The count's current values, by field (a value longer than its field is cut); None: the
    form is about no existing count and opens empty."""

    @property
    def for_count(self) -> bool:
        """The form is opened for a count the verb names (``edit <count>``)."""
        return self.initial is not None

    def field_for(self, error: str) -> Field:
        """The field an error is about: the one covering the first of its words that a field
        covers (``fields: 'x' is not a choice`` is about ``fields``), else the first."""
        for word in re.findall(r"[a-z]+", error.lower()):
            for f in self.fields:
                if word in f.covers:
                    return f
        return self.fields[0]

    def __post_init__(self) -> None:
        if not 0 < len(self.title) <= 45 or not 0 < len(self.fields) <= 5:
            raise ValueError(f"form {self.title!r}: a title of 1 to 45 characters, 1 to 5 fields")
        if any(len(f.label) > 45 or len(f.placeholder) > 100 for f in self.fields):
            raise ValueError(f"form {self.title!r}: labels of 45, placeholders of 100 at most")
        if any(not 0 < f.most <= FIELD_MOST for f in self.fields):
            raise ValueError(f"form {self.title!r}: fields take 1 to {FIELD_MOST} characters")


@dataclass(frozen=True, slots=True)
class Opening:
    """A verb's form as opened for one person: for which count (None: a new one), and what each
    field showed (the values it was opened with, on one line, each at most its field's
    ``most``: what the person saw is what the line compares with)."""

    verb: str
    form: Form
    count: str | None = None
    shown: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, verb: str, form: Form, count: Count | None, source: str | None) -> Opening:
        """``form`` opened for ``count`` (None: a form about no existing count)."""
        if count is None or form.initial is None:
            return cls(verb, form)
        values = form.initial(count, source)
        shown = {f.key: one_line(values.get(f.key, ""))[: f.most] for f in form.fields}
        return cls(verb, form, count.id, shown)

    def line(self, values: Mapping[str, str]) -> str:
        """The command line of the submitted ``values``."""
        return self.form.line(self, values)


def one_line(text: str) -> str:
    """``text`` on one line, its runs of whitespace one space."""
    return " ".join(text.split())


def quoted(key: str, text: str) -> str:
    """``key="text"``, as the line's grammar takes a value with spaces."""
    # The grammar's quotes cannot be escaped: a double quote typed in a field is dropped, as
    # the typed command drops it.
    return f'{key}="{one_line(text).replace(chr(34), "")}"'


def create_line(opening: Opening, values: Mapping[str, str]) -> str:
    """``create`` as typed, from the create form's values."""
    words = ["create", one_line(values.get("count", ""))]
    for key in ("title", "choices"):
        if one_line(values.get(key, "")):
            words.append(quoted(key, values[key]))
    for key in ("rules", "figures"):
        words.append(one_line(values.get(key, "")))
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
