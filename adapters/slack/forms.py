"""A verb's form (``VerbSpec.form``) as a Slack modal (``views.open``): an input block for each
field, filled in with what the core opened it with (``Opening.shown``: an edited count's current
values); the ``view_submission`` is read back into the form as opened and its values, whose
command line the core carries out. An error is shown on the field it is about
(``Form.field_for``).

The modal's ``callback_id`` names the verb (``tallybot:create``) and its ``private_metadata``
the channel the command was typed in, where the answer goes, and the count the form is about
(``{"channel": "C1", "count": "local-7"}``). What each field showed is read back from the view's
own blocks (their ``initial_value``), which Slack sends with the submission."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.platform import Form, Opening

CALLBACK_PREFIX = "tallybot:"
TITLE_MOST = 24
"""Slack's limit on a modal's title (and its buttons)."""
INPUT_MOST = 3000
"""Slack's limit on a plain_text_input's max_length."""


def _plain(text: str, most: int = 2000) -> dict[str, Any]:
    return {"type": "plain_text", "text": text[:most]}


def modal_view(opening: Opening, channel_id: str) -> dict[str, Any]:
    blocks = []
    for field in opening.form.fields:
        most = min(field.most, INPUT_MOST)
        element: dict[str, Any] = {
            "type": "plain_text_input",
            "action_id": field.key,
            "max_length": most,
        }
        if field.placeholder:
            element["placeholder"] = _plain(field.placeholder, 150)
        if opening.shown.get(field.key):
            element["initial_value"] = opening.shown[field.key][:most]
        blocks.append(
            {
                "type": "input",
                "block_id": field.key,
                "optional": not field.required,
                "label": _plain(field.label),
                "element": element,
            }
        )
    return {
        "type": "modal",
        "callback_id": CALLBACK_PREFIX + opening.verb,
        "title": _plain(opening.form.title, TITLE_MOST),
        "submit": _plain("Submit"),
        "close": _plain("Cancel"),
        "private_metadata": json.dumps({"channel": channel_id, "count": opening.count}),
        "blocks": blocks,
    }


@dataclass(frozen=True, slots=True)
class Submitted:
    """A ``view_submission`` read back: the form as opened, the channel, what was filled in."""

    opening: Opening
    channel: str
    values: dict[str, str]

    @property
    def line(self) -> str:
        return self.opening.line(self.values)


def submitted(verb: str, form: Form, view: dict[str, Any]) -> Submitted:
    """The form as opened and its values in a view_submission's ``view`` (an empty field: "")."""
    raw = str(view.get("private_metadata") or "")
    try:
        meta = json.loads(raw or "{}")
    except ValueError:
        meta = None
    if not isinstance(meta, dict):  # a create form opened before the metadata was JSON
        meta = {"channel": raw}
    count = meta.get("count")
    shown: dict[str, str] = {}
    for block in view.get("blocks") or []:
        element = block.get("element") or {} if isinstance(block, dict) else {}
        if isinstance(element.get("initial_value"), str):
            shown[str(block.get("block_id"))] = element["initial_value"]
    state = view.get("state", {}).get("values", {})
    values: dict[str, str] = {}
    for field in form.fields:
        entry = state.get(field.key, {}).get(field.key, {})
        values[field.key] = str(entry.get("value") or "")
    opening = Opening(verb, form, count if isinstance(count, str) else None, shown)
    return Submitted(opening, str(meta.get("channel") or ""), values)
