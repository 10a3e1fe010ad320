"""The create form's values make the line a person would type (bot.commands.forms)."""

from __future__ import annotations

from bot.commands.builtin import VERBS
from bot.commands.forms import CREATE_FORM, Opening, create_line


def test_the_values_make_the_typed_line_and_it_parses() -> None:
    values = {
        "count": " local-7 ",
        "title": 'Local 7\n"strike" vote',
        "choices": "yes:Strike,no:No strike",
        "rules": "rule=majority  tie=no",
        "figures": "",
    }
    line = create_line(Opening("create", CREATE_FORM), values)
    assert line == (
        'create local-7 title="Local 7 strike vote" choices="yes:Strike,no:No strike" '
        "rule=majority tie=no"
    )
    command = VERBS.parse(line)
    assert command.count == "local-7"
    assert dict(command.settings) == {
        "title": "Local 7 strike vote",
        "choices": "yes:Strike,no:No strike",
        "rule": "majority",
        "tie": "no",
    }


def test_an_error_is_placed_on_the_field_it_names() -> None:
    assert CREATE_FORM.field_for("Error: unknown rule 'x'").key == "rules"
    assert CREATE_FORM.field_for("Error: eligible must be a number").key == "figures"
    assert CREATE_FORM.field_for("Error: only admins can create a count").key == "count"
    assert VERBS["create"].form is CREATE_FORM
