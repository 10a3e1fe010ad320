"""A form's values make the line a person would type (bot.commands.forms): the create form's,
and the edit form's, which opens (through the core, for who may administer the count) with the
count's current settings and names only the fields changed."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

from bot.commands.builtin import VERBS
from bot.commands.edit_form import EDIT_FORM
from bot.commands.forms import CREATE_FORM, Opening, create_line
from bot.commands.request import Reply, Request
from bot.domain.model import OPERATOR, Choice, Count, DecisionRule, RuleKind
from bot.domain.subscription import ChannelRef
from bot.runtime.app import App
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.testing.clock import FakeClock
from tests.runtime.test_count_verbs import ELSEWHERE, HALL, MAKE, app_for, ask, config


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


# ---------------------------------------------------------------------------- the edit form

FEED = "https://feeds.example.org/local7.json"
MADE = f"{MAKE} source={FEED} fields=yes:results.0,no:results.1,void:spoilt public=no rule=majority"


async def open_edit(app: App, name: str, *, admin: bool = True, where: ChannelRef = HALL) -> Reply:
    assert isinstance(app.clock, FakeClock)
    app.clock.advance(3)
    user = "42" if admin else "7"
    request = Request(where, user, f"user{user}", f"edit {name}", tenant_admin=admin, form=True)
    return await app.commands.handle(request)


async def test_the_edit_form_opens_with_the_counts_settings_and_sends_what_changed(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(config(tmp_path, hosts=["feeds.example.org"]), clock) as app:
        assert (await ask(app, MADE)).ok
        opened = await open_edit(app, "local-7")
        assert opened.form is not None
        opening = opened.form
        # another admin changes a figure while the form is open: the submit keeps it
        assert (await ask(app, "edit local-7 eligible=460")).ok
        line = opening.line({**opening.shown, "title": "Local 7  strike\nauthorisation"})
        edited = await ask(app, line)
        async with app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
            (entry, *_) = await audit_rows.recent(conn, count_id="local-7")
    assert opening.verb == "edit"
    assert opening.count == "local-7"
    assert opening.form is EDIT_FORM
    assert dict(opening.shown) == {
        "title": "Local 7 strike vote",
        "choices": "yes:Strike,no:No strike",
        "rules": "rule=majority tie=no public=no",
        "figures": "received=412 eligible=450",
        "source": f"source={FEED} fields=yes:results.0,no:results.1,void:spoilt",
    }
    assert line == 'edit local-7 title="Local 7 strike authorisation"'
    assert edited.text.startswith("Changed local-7: Local 7 strike authorisation;")
    assert count is not None
    assert (count.title, count.eligible, count.received) == (
        "Local 7 strike authorisation",
        460,
        412,
    )
    assert (entry.action, entry.allowed, entry.detail) == ("edit", True, "edited")
    assert entry.old is not None
    assert entry.new is not None
    before, after = entry.old.split("; "), entry.new.split("; ")
    assert [(b, a) for b, a in zip(before, after, strict=True) if b != a] == [
        ("title=Local 7 strike vote", "title=Local 7 strike authorisation")
    ]


async def test_the_edit_form_opens_only_for_who_may_administer_the_count(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(config(tmp_path), clock) as app:
        assert (await ask(app, MAKE)).ok
        elsewhere = await open_edit(app, "local-7", where=ELSEWHERE)
        typo = await open_edit(app, "local-8", where=ELSEWHERE)
        typed = await ask(app, "edit local-7 eligible=1", where=ELSEWHERE)
        member = await open_edit(app, "local-7", admin=False)
        operators = await open_edit(app, "bessemer-2021")
        async with app.db.connect() as conn:
            audit = await audit_rows.recent(conn)
    assert elsewhere.form is None
    assert member.form is None
    assert elsewhere.text == typed.text == "Error: unknown count 'local-7'"
    assert typo.text == "Error: unknown count 'local-8'"
    assert "Local 7" not in elsewhere.text
    assert member.text.startswith("Error: only admins of the workspace that owns local-7")
    assert operators.form is None  # the operator's private count is not seen here
    assert operators.text == "Error: unknown count 'bessemer-2021' (counts: local-7)"
    refusals = [(a.count_id, a.new, a.allowed) for a in audit if a.action == "edit"]
    assert ("local-7", "edit local-7", False) in refusals


def test_the_edit_line_names_only_the_fields_changed() -> None:
    count = Count(
        "local-7",
        'Local 7 "strike" vote ' + "x" * 98,  # the longest legal title (120): it fits the form
        (Choice("yes", "Strike"), Choice("no", "No strike")),
        DecisionRule(RuleKind.THRESHOLD, threshold=Fraction(2, 3)),
        owner="slack:T1",
    )
    csv = json.dumps(
        {"kind": "http_csv", "url": "https://e.org/feed", "fields": {"votes": {"yes": "Yes votes"}}}
    )
    opening = Opening.of("edit", EDIT_FORM, count, csv)
    shown = dict(opening.shown)
    assert shown["title"] == count.title
    assert shown["rules"] == "rule=threshold tie=none threshold=2/3 public=no"
    assert shown["figures"] == "received=none eligible=none"
    assert shown["source"] == 'source=https://e.org/feed format=csv fields="yes:Yes votes"'
    assert opening.line(shown) == "edit local-7"
    assert opening.line({**shown, "rules": "", "source": " "}) == "edit local-7"
    assert opening.line({**shown, "choices": "yes:Strike!,no:No"}) == (
        'edit local-7 choices="yes:Strike!,no:No"'
    )
    command = VERBS.parse(opening.line({**shown, "source": "source=manual", "figures": "x=1"}))
    assert dict(command.settings) == {"source": "manual"}
    assert command.text == "x=1"  # not a setting: the core says so, on its field
    operators = Opening.of("edit", EDIT_FORM, replace(count, owner=OPERATOR), None)
    assert operators.shown["source"] == ""
    assert EDIT_FORM.field_for("Error: fields: 'x' is not a choice of local-7").key == "source"
    assert EDIT_FORM.field_for("Error: received (5) is more than eligible (4)").key == "figures"
    assert EDIT_FORM.field_for("Error: nothing to change; usage: edit").key == "title"
