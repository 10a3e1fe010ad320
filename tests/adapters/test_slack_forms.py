"""``/count create`` with nothing after it opens a Slack modal (``views.open`` with the
command's trigger_id); the ``view_submission`` is the same command line as the typed command,
carried out by the core (FakeSlack, the real slack_bolt client over Socket Mode): the count is
made and seen, an error comes back on its field (``response_action: errors``) and makes nothing,
a member without authority is refused before the form opens."""

from __future__ import annotations

from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError

from bot.domain.model import Choice
from bot.store import counts as count_rows
from tests.adapters import test_slack_oauth as oauth
from tests.adapters.test_slack import Bot, VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack
from tests.fakes.slack_fake.views import OpenedView

FILLED = {
    "count": "local-7",
    "title": "Local 7 strike vote",
    "choices": "yes:Strike,no:No strike",
    "rules": "rule=majority tie=no",
    "figures": "received=412 eligible=450",
}


async def open_form(bot: Bot, user: str, channel: str) -> OpenedView:
    fake = bot.fake
    opened = len(fake.views.opened)
    delivery = await fake.send_slash_command(
        command="/count", text="create", user_id=user, channel_id=channel
    )
    assert delivery.acked
    await fake.wait_for(lambda: len(fake.views.opened) > opened)
    return fake.views.opened[-1]


async def test_the_form_opens_and_its_submit_makes_the_count(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        opened = await open_form(bot, ada, home)
        done = await fake.send_view_submission(opened, FILLED)
        await fake.wait_for(lambda: bool(fake.ephemerals))
        vt.clock.advance(6)
        status = await bot.slash("status local-7", user=ada, channel=home)
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    assert opened.view["title"]["text"] == "New count"
    assert [b["block_id"] for b in opened.view["blocks"]] == list(FILLED)
    assert done.ack_payload in (None, {})
    assert fake.ephemerals[-1].text.startswith("Created local-7: Local 7 strike vote;")
    assert (fake.ephemerals[-1].channel, fake.ephemerals[-1].user) == (home, ada)
    assert "Local 7 strike vote" in str(status.body)
    assert count is not None
    assert (count.owner, count.received, count.eligible) == (f"slack:{fake.team_id}", 412, 450)
    assert count.choices == (Choice("yes", "Strike"), Choice("no", "No strike"))


async def test_a_bad_field_gets_the_typed_commands_error_on_that_field(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        opened = await open_form(bot, ada, home)
        refused = await fake.send_view_submission(opened, {**FILLED, "rules": "rule=unanimous"})
        vt.clock.advance(6)
        typed = await bot.slash(
            'create local-7 title="Local 7 strike vote" choices="yes:Strike,no:No strike" '
            "rule=unanimous tie=no received=412 eligible=450",
            user=ada,
            channel=home,
        )
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    assert refused.ack_payload is not None
    assert refused.ack_payload["response_action"] == "errors"
    assert refused.ack_payload["errors"] == {"rules": typed.body["text"]}
    assert typed.body["text"].startswith("Error: ")
    assert count is None


async def test_a_member_without_authority_is_refused_before_the_form_opens(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    bo = fake.add_user("bo")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        refused = await bot.slash("create", user=bo, channel=home)
    assert fake.views.opened == []
    assert refused.body["text"].startswith("Error: only admins")
    assert refused.body["response_type"] == "ephemeral"


async def test_the_fake_opens_a_modal_only_with_a_fresh_trigger_and_for_its_user(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    home = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    bo = fake.add_user("bo")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        opened = await open_form(bot, ada, home)
        with pytest.raises(ValueError, match="another user"):
            await fake.send_view_submission(opened, FILLED, user_id=bo)
        with pytest.raises(ValueError, match="required"):
            await fake.send_view_submission(opened, {**FILLED, "count": ""})
        used = fake.calls_to("views.open")[-1].args["trigger_id"]
        with pytest.raises(SlackApiError) as again:
            await bot.adapter.client.views_open(trigger_id=used, view=opened.view)
    assert again.value.response["error"] == "invalid_trigger_id"


async def test_with_oauth_the_form_opens_and_answers_with_the_workspaces_own_token(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    alpha, beta = fake.add_team("alpha"), fake.add_team("beta")
    news_b = fake.add_channel("news-beta", team_id=beta)
    bo = fake.add_user("bo", team_id=beta, is_admin=True)
    cfg = oauth.config(tmp_path, fake)
    async with oauth.running(fake, cfg, vt, monkeypatch) as bot:
        for team in (alpha, beta):
            assert (await bot.install(team))[0] == 200
        tokens = {team: token for token, team in fake.installed_tokens.items()}
        delivery = await fake.send_slash_command(
            command="/count", text="create", user_id=bo, channel_id=news_b
        )
        assert delivery.acked
        await fake.wait_for(lambda: bool(fake.views.opened))
        await fake.send_view_submission(fake.views.opened[-1], FILLED)
        await fake.wait_for(lambda: bool(fake.ephemerals))
        async with bot.app.db.connect() as conn:
            count = await count_rows.get(conn, "local-7")
    assert fake.ephemerals[-1].text.startswith("Created local-7")
    assert count is not None
    assert count.owner == f"slack:{beta}"
    used = fake.calls_to("views.open") + fake.calls_to("chat.postEphemeral")
    assert [c.token for c in used] == [tokens[beta]] * 2
