"""A verb's form (``VerbSpec.form``) as a Slack modal (``views.open``): an input block for each
field; the ``view_submission`` is read back into the form's values, whose command line the core
carries out. An error is shown on the field it is about (``Form.field_for``).

The modal's ``callback_id`` names the verb (``tallybot:create``) and its ``private_metadata``
the channel the command was typed in, where the answer goes."""

from __future__ import annotations

from typing import Any

from bot.commands.forms import Form

CALLBACK_PREFIX = "tallybot:"
TITLE_MOST = 24
"""Slack's limit on a modal's title (and its buttons)."""
INPUT_MOST = 3000
"""Slack's limit on a plain_text_input's max_length."""


def _plain(text: str, most: int = 2000) -> dict[str, Any]:
    return {"type": "plain_text", "text": text[:most]}


def modal_view(verb: str, form: Form, channel_id: str) -> dict[str, Any]:
    blocks = [
        {
            "type": "input",
            "block_id": field.key,
            "optional": not field.required,
            "label": _plain(field.label),
            "element": {
                "type": "plain_text_input",
                "action_id": field.key,
                "max_length": min(field.most, INPUT_MOST),
                **({"placeholder": _plain(field.placeholder, 150)} if field.placeholder else {}),
            },
        }
        for field in form.fields
    ]
    return {
        "type": "modal",
        "callback_id": CALLBACK_PREFIX + verb,
        "title": _plain(form.title, TITLE_MOST),
        "submit": _plain("Submit"),
        "close": _plain("Cancel"),
        "private_metadata": channel_id,
        "blocks": blocks,
    }


def submitted(form: Form, view: dict[str, Any]) -> dict[str, str]:
    """The form's values in a view_submission's ``view.state`` (an empty field: "")."""
    state = view.get("state", {}).get("values", {})
    values: dict[str, str] = {}
    for field in form.fields:
        entry = state.get(field.key, {}).get(field.key, {})
        values[field.key] = str(entry.get("value") or "")
    return values
