"""The form of ``edit``: opened for a count (``/count edit <count>`` with nothing else), filled
in with its current settings, and submitted as the one line a person would type.

The line names only the fields that were changed (compared with what the form showed): a setting
left as shown is not sent, so ``edit`` changes what the person changed and nothing else. Another
admin's change made while the form was open is kept (it is not written back with the old value
the form showed), a source that was accepted once is not checked anew because the title changed,
and the audit entry's before and after differ in what was changed. A field's words mean what
they mean typed: a setting taken out of a field is left as it is; ``none`` clears it
(``tie=none``, ``received=none``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bot.commands.count_line import FIGURE_TARGETS
from bot.commands.forms import Field, Form, Opening, one_line, quoted
from bot.domain.model import OPERATOR, Count

QUOTED = ("title", "choices")
"""The fields whose whole value is one setting (put in double quotes in the line)."""


def _word(key: str, value: str) -> str:
    return quoted(key, value) if any(c.isspace() for c in value) else f"{key}={value}"


def source_words(count: Count, source: str | None) -> str:
    """A count's source as typed: ``source=URL [format=csv] [fields=yes:results.0,...]``,
    ``source=manual``; nothing for the operator's counts (their source is in the file)."""
    if count.owner == OPERATOR:
        return ""
    if source is None:
        return "source=manual"
    table = json.loads(source)
    url = str(table["url"])
    words = [_word("source", url)]
    csv = table["kind"] == "http_csv"
    if csv != url.lower().split("?")[0].endswith(".csv"):
        words.append("format=csv" if csv else "format=json")
    mapped = table.get("fields") or {}
    parts = [f"{key}:{path}" for key, path in (mapped.get("votes") or {}).items()]
    parts += [f"{key}:{mapped[key]}" for key in FIGURE_TARGETS if mapped.get(key)]
    if parts:
        words.append(_word("fields", ",".join(parts)))
    return " ".join(words)


def current(count: Count, source: str | None) -> dict[str, str]:
    """The edit form's fields as ``count`` has them now."""
    rule = count.rule
    rules = [f"rule={rule.kind}", f"tie={rule.tie_holder or 'none'}"]
    if rule.threshold is not None:
        rules.append(f"threshold={rule.threshold}")
    rules.append(f"public={'yes' if count.public else 'no'}")
    figures = [
        f"{key}={'none' if value is None else value}"
        for key, value in (("received", count.received), ("eligible", count.eligible))
    ]
    return {
        "title": count.title,
        "choices": ",".join(f"{c.id}:{c.label}" for c in count.choices),
        "rules": " ".join(rules),
        "figures": " ".join(figures),
        "source": source_words(count, source),
    }


def edit_line(opening: Opening, values: Mapping[str, str]) -> str:
    """``edit <count>`` with the fields changed since the form opened (see the module)."""
    words = ["edit", opening.count or ""]
    for f in opening.form.fields:
        now = one_line(values.get(f.key, ""))
        if not now or now == opening.shown.get(f.key, ""):
            continue
        words.append(quoted(f.key, now) if f.key in QUOTED else now)
    return " ".join(w for w in words if w)


EDIT_FORM = Form(
    "Edit count",
    (
        Field("title", "Title", "Local 7 strike vote", most=256, covers=("title",)),
        Field(
            "choices",
            "Choices (id:Label; the ids stay as they are)",
            "yes:Strike,no:No strike",
            most=1000,
            covers=("choices", "choice"),
        ),
        Field(
            "rules",
            "Rule, tie holder, threshold, public",
            "rule=majority tie=none public=no",
            required=False,
            covers=("rule", "tie", "threshold", "public"),
        ),
        Field(
            "figures",
            "Ballots received, eligible (none: unknown)",
            "received=412 eligible=none",
            required=False,
            covers=("received", "eligible"),
        ),
        Field(
            "source",
            "Source: manual, or source=URL fields=...",
            "source=https://example.org/local7.json fields=yes:results.0,no:results.1",
            required=False,
            most=2000,
            covers=("source", "fields", "format", "url"),
        ),
    ),
    edit_line,
    initial=current,
)
"""The form of ``edit``."""
