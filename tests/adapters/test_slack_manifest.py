"""The shipped Slack manifest (config/slack-manifest.yml) grants what the code uses, and FakeSlack
applies a manifest as Slack would: scopes (``missing_scope``), events, interactivity (no
``view_submission`` without it) and should_escape (mentions as typed, or ``<@U…|name>``)."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.adapters.test_slack import VirtualTime, config, running
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import METHOD_SCOPES, FakeSlack, load_manifest

SLACK = Path(__file__).parents[2] / "adapters" / "slack"
SOURCE = "\n".join(p.read_text() for p in sorted(SLACK.glob("*.py")))
SHIPPED = load_manifest()
NO_SCOPE = {"auth.test", "views.open", "apps.connections.open", "oauth.v2.access"}


def methods_called() -> set[str]:
    """Web API methods the Slack adapter calls: ``client.chat_postMessage(`` or ``"pins.add"``."""
    snake = re.findall(r"\.((?:chat|conversations|pins|users|files|views|auth)_\w+)\(", SOURCE)
    dotted = re.findall(r"\"((?:chat|conversations|pins|users|files|views|auth)\.\w+)\"", SOURCE)
    return {m.replace("_", ".", 1) for m in snake} | set(dotted)


def test_every_method_the_code_calls_has_its_scope_in_the_manifest() -> None:
    called = methods_called()
    assert {"chat.postMessage", "views.open", "users.info", "pins.add"} <= called
    unknown = called - set(METHOD_SCOPES) - NO_SCOPE
    assert unknown == set(), "add the method's scope to the fake's METHOD_SCOPES"
    assert {m for m in called if SHIPPED.missing_scope(m)} == set()


def test_opening_forms_needs_interactivity() -> None:
    assert "views_open(" in SOURCE
    assert SHIPPED.interactivity


def test_parsing_escaped_mentions_needs_should_escape() -> None:
    assert "<!subteam" in (SLACK / "mentions.py").read_text()
    assert SHIPPED.commands["/count"].should_escape


def test_every_event_the_code_listens_to_is_declared() -> None:
    listened = set(re.findall(r"\.event\(\"(\w+)\"\)", SOURCE))
    assert "app_mention" in listened
    assert listened - SHIPPED.bot_events == set()
    assert "app_mentions:read" in SHIPPED.scopes


def test_the_usage_hint_names_the_options_people_need() -> None:
    hint = SHIPPED.commands["/count"].usage_hint
    for needed in ("mention=", "close=", "create ", "update "):
        assert needed in hint


async def test_a_method_without_its_scope_answers_missing_scope() -> None:
    bare = replace(SHIPPED, scopes=SHIPPED.scopes - {"pins:write"})
    async with FakeSlack(manifest=bare) as fake:
        channel = fake.add_channel("general")
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        posted = await client.chat_postMessage(channel=channel, text="hi")
        with pytest.raises(SlackApiError) as refused:
            await client.pins_add(channel=channel, timestamp=posted["ts"])
    assert refused.value.response["error"] == "missing_scope"
    assert refused.value.response["needed"] == "pins:write"


async def test_without_interactivity_a_form_is_never_submitted(
    tmp_path: Path, vt: VirtualTime
) -> None:
    off = replace(SHIPPED, interactivity=False)
    async with FakeSlack(manifest=off, clock=vt.monotonic) as fake:
        channel = fake.add_channel("general")
        ada = fake.add_user("ada", is_admin=True)
        async with running(fake, config(tmp_path, fake), vt):
            delivery = await fake.send_slash_command(
                command="/count", text="create", user_id=ada, channel_id=channel
            )
            assert delivery.acked
            await fake.wait_for(lambda: len(fake.views.opened) == 1)
            with pytest.raises(ValueError, match="interactivity is off"):
                await fake.send_view_submission(fake.views.opened[0], {})


async def test_should_escape_decides_what_text_arrives() -> None:
    async with FakeSlack() as fake:
        channel = fake.add_channel("general")
        voter = fake.add_user("voter")
        escaped = fake.slash_command_payload(
            command="/count",
            text="admins add x @voter #general @here @nobody",
            user_id=voter,
            channel_id=channel,
        )
    assert escaped["text"] == (
        f"admins add x <@{voter}|voter> <#{channel}|general> <!here> @nobody"
    )
    as_typed = replace(
        SHIPPED, commands={"/count": replace(SHIPPED.commands["/count"], should_escape=False)}
    )
    async with FakeSlack(manifest=as_typed) as fake:
        channel = fake.add_channel("general")
        voter = fake.add_user("voter")
        typed = fake.slash_command_payload(
            command="/count", text="admins add x @voter", user_id=voter, channel_id=channel
        )
        with pytest.raises(ValueError, match="should_escape is false"):
            fake.slash_command_payload(
                command="/count",
                text=f"admins add x <@{voter}>",
                user_id=voter,
                channel_id=channel,
            )
    assert typed["text"] == "admins add x @voter"


async def test_an_admin_typed_as_at_name_is_added(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel = fake.add_channel("general")
    ada = fake.add_user("ada", is_admin=True)
    voter = fake.add_user("voter")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        added = await bot.slash("admins add bessemer-2021 @voter", user=ada, channel=channel)
        vt.clock.advance(6)
        listed = await bot.slash("admins list bessemer-2021", user=ada, channel=channel)
    assert "is not a user" not in added.body["text"]
    # By name, as plain text (issue 28, part 4): no <@U…>, which would notify them.
    assert added.body["text"] == "voter now administers bessemer-2021."
    assert listed.body["text"] == "bessemer-2021 is also administered by: voter"
    asked = [c.ok for c in fake.calls_to("users.info") if c.args["user"] == voter]
    assert asked == [True, True]  # who they are, for each reply
