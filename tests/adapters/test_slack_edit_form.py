"""``/count edit <count>`` with nothing else opens the edit form (``views.open`` with the
command's trigger_id) filled in with the count's current settings (FakeSlack, the real
slack_bolt client over Socket Mode): a changed field edits the count, audited, and nothing else;
an error comes back on its field (``response_action: errors``); the form opens only for who may
administer the count (another workspace's owner gets the answer a typo gets, and no modal);
hostile titles and labels go in and out as plain text."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError

from adapters.slack.forms import submitted
from bot.commands.forms import CREATE_FORM
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from tests.adapters.test_slack import Bot, VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.markup import markup
from tests.fakes.slack_fake.views import OpenedView
from tests.hostile import HOSTILE

NAME = "local-7"
FEED = "https://feeds.example.org/local7.json"


def local_7(team: str, **changes: object) -> Count:
    count = Count(
        NAME,
        "Local 7 strike vote",
        (Choice("yes", "Strike"), Choice("no", "No strike")),
        DecisionRule(RuleKind.MAJORITY, "no"),
        received=412,
        eligible=450,
        status=CountStatus.COUNTING,
        owner=f"slack:{team}",
    )
    return replace(count, **changes)  # type: ignore[arg-type]


async def open_edit(bot: Bot, user: str, channel: str, name: str = NAME) -> OpenedView:
    fake = bot.fake
    opened = len(fake.views.opened)
    assert bot.vt is not None
    bot.vt.clock.advance(6)  # within the command limits
    delivery = await fake.send_slash_command(
        command="/count", text=f"edit {name}", user_id=user, channel_id=channel
    )
    assert delivery.acked
    await fake.wait_for(lambda: len(fake.views.opened) > opened)
    return fake.views.opened[-1]


def shown(opened: OpenedView) -> dict[str, str]:
    return {
        b["block_id"]: b["element"].get("initial_value", "")
        for b in opened.view["blocks"]
        if b["type"] == "input"
    }


async def test_the_form_opens_filled_in_and_a_changed_field_edits_the_count(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(fake.team_id))
        made = await bot.slash(
            f"edit {NAME} source={FEED} fields=yes:results.0,no:results.1", user=ada, channel=home
        )
        opened = await open_edit(bot, ada, home)
        done = await fake.send_view_submission(opened, {"choices": "yes:Strike now,no:No"})
        await fake.wait_for(lambda: bool(fake.ephemerals))
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
            source = await count_rows.source_json(conn, NAME)
            (entry, *_) = await audit_rows.recent(conn, count_id=NAME)
    assert made.body["text"].startswith("Changed local-7")
    assert opened.view["title"]["text"] == "Edit count"
    assert opened.view["callback_id"] == "tallybot:edit"
    assert shown(opened) == {
        "title": "Local 7 strike vote",
        "choices": "yes:Strike,no:No strike",
        "rules": "rule=majority tie=no public=no",
        "figures": "received=412 eligible=450",
        "source": f"source={FEED} fields=yes:results.0,no:results.1",
    }
    assert done.ack_payload in (None, {})
    assert fake.ephemerals[-1].text.startswith("Changed local-7: Local 7 strike vote;")
    assert (fake.ephemerals[-1].channel, fake.ephemerals[-1].user) == (home, ada)
    choices = (Choice("yes", "Strike now"), Choice("no", "No"))
    assert count == local_7(fake.team_id, choices=choices)
    assert source is not None
    assert FEED in source  # the source, left as shown, is not sent again
    assert (entry.action, entry.allowed) == ("edit", True)
    assert entry.old is not None
    assert entry.new == entry.old.replace("no:No strike", "no:No").replace(
        "yes:Strike", "yes:Strike now"
    )


async def test_an_error_lands_on_the_field_it_names(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(fake.team_id))
        figures = await fake.send_view_submission(
            await open_edit(bot, ada, home), {"figures": "received=500 eligible=450"}
        )
        ids = await fake.send_view_submission(
            await open_edit(bot, ada, home), {"choices": "aye:Aye,no:No"}
        )
        source = await fake.send_view_submission(
            await open_edit(bot, ada, home), {"source": "source=http://169.254.169.254/x.json"}
        )
        vt.clock.advance(6)
        typed = await bot.slash(f"edit {NAME} received=500", user=ada, channel=home)
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
    errors = [d.ack_payload for d in (figures, ids, source)]
    assert [e and e["response_action"] for e in errors] == ["errors"] * 3
    assert [list(e["errors"]) for e in errors if e] == [["figures"], ["choices"], ["source"]]
    assert figures.ack_payload is not None
    assert figures.ack_payload["errors"]["figures"] == typed.body["text"]
    assert typed.body["text"].startswith("Error: received (500) is more than eligible (450)")
    assert count == local_7(fake.team_id)


async def test_another_workspaces_owner_gets_no_form_and_a_typos_answer(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    other = fake.add_workspace("elsewhere")
    home = fake.add_channel("general")
    away = fake.add_channel("elsewhere-general", team_id=other)
    bo = fake.add_user("bo")  # a member of workspace A
    olga = fake.add_user("olga", is_owner=True, team_id=other)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(fake.team_id))
        theirs = await bot.slash(f"edit {NAME}", user=olga, channel=away)
        vt.clock.advance(6)
        typo = await bot.slash("edit local-8", user=olga, channel=away)
        vt.clock.advance(6)
        member = await bot.slash(f"edit {NAME}", user=bo, channel=home)
    assert fake.views.opened == []
    assert theirs.body["text"] == typo.body["text"].replace("local-8", NAME)
    assert typo.body["text"].startswith("Error: unknown count 'local-8'")
    assert theirs.body["response_type"] == "ephemeral"
    assert "Strike" not in str(theirs.body)
    assert member.body["text"].startswith("Error: only admins of the workspace that owns local-7")


async def test_hostile_titles_and_labels_go_in_and_out_as_plain_text(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    title, label, new_title = HOSTILE[1], HOSTILE[2], HOSTILE[0]
    choices = (Choice("yes", label), Choice("no", "No"))
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(fake.team_id, title=title, choices=choices))
        opened = await open_edit(bot, ada, home)
        done = await fake.send_view_submission(opened, {"title": new_title})
        await fake.wait_for(lambda: bool(fake.ephemerals))
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, NAME)
    assert shown(opened)["title"] == title
    assert shown(opened)["choices"] == f"yes:{label},no:No"
    assert all(
        b["element"]["type"] == "plain_text_input" and b["label"]["type"] == "plain_text"
        for b in opened.view["blocks"]
    )
    assert done.ack_payload in (None, {})
    assert count == local_7(fake.team_id, title=new_title, choices=choices)
    answer = fake.ephemerals[-1]
    assert answer.text.startswith("Changed local-7: ")
    assert markup(answer.text) == []


async def test_the_fake_refuses_an_initial_value_longer_than_its_input_and_submits_it_as_left(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        async with bot.app.db.begin() as conn:
            await count_rows.upsert(conn, local_7(fake.team_id))
        opened = await open_edit(bot, ada, home)
        view = json.loads(json.dumps(opened.view))
        view["blocks"][0]["element"]["max_length"] = 5
        fake.views.issue("TR-fresh", ada, fake.team_id)
        with pytest.raises(SlackApiError) as refused:
            await bot.adapter.client.views_open(trigger_id="TR-fresh", view=view)
        payload = fake.views.submission(opened, {"rules": ""}, ada)
    assert refused.value.response["error"] == "invalid_arguments"
    state = payload["view"]["state"]["values"]
    assert state["title"]["title"]["value"] == "Local 7 strike vote"  # left as filled in
    assert state["rules"]["rules"]["value"] is None  # emptied


def test_a_create_form_opened_before_the_metadata_was_json_still_answers_its_channel() -> None:
    view = {
        "private_metadata": "C0LD",
        "blocks": [],
        "state": {"values": {"count": {"count": {"value": "local-9"}}}},
    }
    got = submitted("create", CREATE_FORM, view)
    assert got.channel == "C0LD"
    assert got.opening.count is None
    assert got.line == "create local-9"
