"""FakeSlack installed in two workspaces of one organisation (an Enterprise Grid org-wide
install: one bot token), driven by the real slack_bolt client: commands carry the workspace
they were run in, and users.info says which workspace a member belongs to."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp

from tests.fakes.slack_fake import FakeSlack

from .test_slack_fake import PROXY_VARS, socket_app, web_client


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARS:  # slack_sdk would send loopback requests to a proxy
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as f:
        yield f


async def test_commands_carry_the_workspace_they_were_run_in(fake: FakeSlack) -> None:
    other = fake.add_workspace("other-local", "Other Local")
    home_channel = fake.add_channel("general")
    other_channel = fake.add_channel("general-other", team_id=other)
    owner = fake.add_user("olga", is_owner=True, team_id=other)
    app = AsyncApp(client=web_client(fake), signing_secret=fake.signing_secret)
    seen: list[dict[str, Any]] = []

    @app.command("/count")
    async def tally(ack: Any, command: dict[str, Any]) -> None:
        await ack()
        seen.append(command)

    async with socket_app(fake, app):
        for channel in (home_channel, other_channel):
            await fake.send_slash_command(
                command="/count", text="x", user_id=owner, channel_id=channel
            )
        await fake.wait_for(lambda: len(seen) == 2)
    info = (await web_client(fake).users_info(user=owner))["user"]

    assert other != fake.team_id
    assert [(c["team_id"], c["team_domain"]) for c in seen] == [
        (fake.team_id, fake.team_domain),
        (other, "other-local"),
    ]
    assert {c["enterprise_id"] for c in seen} == {"E0FAKE0001"}
    assert {c["is_enterprise_install"] for c in seen} == {"true"}
    assert (info["team_id"], info["is_owner"]) == (other, True)


async def test_a_single_workspace_install_has_no_enterprise(fake: FakeSlack) -> None:
    payload = fake.slash_command_payload(
        command="/count", text="x", user_id=fake.add_user("ada"), channel_id=fake.add_channel("g")
    )
    assert payload["team_id"] == fake.team_id
    assert payload["is_enterprise_install"] == "false"
    assert "enterprise_id" not in payload
