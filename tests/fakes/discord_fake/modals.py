"""Modals: the limits Discord puts on a modal response (callback type 9), and the MODAL_SUBMIT
interaction (type 5) a member sends by filling one in.

Limits, as Discord documents them: title at most 45 characters, custom_id at most 100, 1 to 5
top-level components (action rows, or labels), each holding one text input; a text input's
label at most 45, placeholder 100, value and min/max length 4000, and its value (what it is
filled in with) within its own min/max length. A submit carries each field as the member left
it: the value given for it, else what it was filled in with."""

from __future__ import annotations

from typing import Any

from .interaction import FakeInteraction
from .limits import FormErrors, _check_text
from .models import JSON
from .state import FakeDiscord

MAX_TITLE = 45
MAX_CUSTOM_ID = 100
MAX_ROWS = 5
MAX_LABEL = 45
MAX_PLACEHOLDER = 100
MAX_VALUE = 4000
TEXT_INPUT = 4
ACTION_ROW = 1
LABEL = 18


def text_inputs(modal: JSON) -> list[JSON]:
    """The modal's text inputs, in order (inside action rows or labels)."""
    found: list[JSON] = []
    for top in modal.get("components") or []:
        if not isinstance(top, dict):
            continue
        inner = top.get("components") if top.get("type") == ACTION_ROW else [top.get("component")]
        found += [c for c in inner or [] if isinstance(c, dict) and c.get("type") == TEXT_INPUT]
    return found


def validate_modal(data: Any) -> FormErrors:
    errors = FormErrors()
    if not isinstance(data, dict):
        errors.required(["data"])
        return errors
    _check_text(errors, data, "title", MAX_TITLE, ["data"], required=True)
    _check_text(errors, data, "custom_id", MAX_CUSTOM_ID, ["data"], required=True)
    rows = data.get("components")
    if not isinstance(rows, list) or not rows:
        errors.required(["data", "components"])
        return errors
    if len(rows) > MAX_ROWS:
        errors.too_long(["data", "components"], MAX_ROWS)
    for i, top in enumerate(rows):
        path: list[str | int] = ["data", "components", i]
        kind = top.get("type") if isinstance(top, dict) else None
        inner = top.get("components") if kind == ACTION_ROW else None
        if kind == LABEL:
            inner = [top.get("component")]
            _check_text(errors, top, "label", MAX_LABEL, path, required=True)
        if not isinstance(inner, list) or len(inner) != 1 or not isinstance(inner[0], dict):
            errors.add(path, "COMPONENT_LAYOUT_WIDTH_EXCEEDED", "One text input per row.")
            continue
        item: JSON = inner[0]
        ipath: list[str | int] = [*path, "components", 0]
        if item.get("type") != TEXT_INPUT:
            errors.add(ipath, "COMPONENT_TYPE_INVALID", "Only text inputs in this modal.")
            continue
        _check_text(errors, item, "custom_id", MAX_CUSTOM_ID, ipath, required=True)
        _check_text(errors, item, "label", MAX_LABEL, ipath, required=kind == ACTION_ROW)
        _check_text(errors, item, "placeholder", MAX_PLACEHOLDER, ipath, required=False)
        _check_text(errors, item, "value", MAX_VALUE, ipath, required=False)
        for key in ("min_length", "max_length"):
            most = item.get(key)
            if most is not None and not (isinstance(most, int) and 0 <= most <= MAX_VALUE):
                errors.add([*ipath, key], "NUMBER_TYPE_MAX", f"Must be at most {MAX_VALUE}.")
        value, most = item.get("value"), item.get("max_length")
        if isinstance(value, str) and isinstance(most, int) and len(value) > most:
            errors.too_long([*ipath, "value"], most)
    return errors


def _checked_values(inputs: list[JSON], values: dict[str, str]) -> None:
    known = {i["custom_id"]: i for i in inputs}
    unknown = set(values) - set(known)
    if unknown:
        raise ValueError(f"the modal has no text input {sorted(unknown)}")
    for custom_id, item in known.items():
        value = _left(item, values)
        if item.get("required", True) and not value:
            raise ValueError(f"text input {custom_id!r} is required: Discord would not submit")
        most = min(int(item.get("max_length") or MAX_VALUE), MAX_VALUE)
        if len(value) > most or len(value) < int(item.get("min_length") or 0):
            raise ValueError(f"text input {custom_id!r}: Discord allows no such length")


def _left(item: JSON, values: dict[str, str]) -> str:
    """A field as the member left it: as given, else as it was filled in."""
    custom_id = item["custom_id"]
    return values[custom_id] if custom_id in values else str(item.get("value") or "")


def submit_payload(shown: FakeInteraction, custom_id: str, values: dict[str, str]) -> JSON:
    """What a submit of the modal that ``shown`` was answered with carries."""
    modal = shown.modal
    if modal is None:
        raise ValueError("that interaction was not answered with a modal")
    if custom_id != modal.get("custom_id"):
        raise ValueError(f"no modal {custom_id!r} was shown to this member")
    inputs = text_inputs(modal)
    _checked_values(inputs, values)
    rows = [
        {
            "type": ACTION_ROW,
            "components": [
                {
                    "type": TEXT_INPUT,
                    "custom_id": i["custom_id"],
                    "value": _left(i, values),
                }
            ],
        }
        for i in inputs
    ]
    return {"custom_id": custom_id, "components": rows}


def shown_modal(fake: FakeDiscord, shown: FakeInteraction, user_id: int) -> None:
    if shown not in fake.interactions or shown.modal is None:
        raise ValueError("that interaction was not answered with a modal")
    if shown.user_id != user_id:
        raise ValueError("the modal was shown to another member")
