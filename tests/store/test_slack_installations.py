"""Slack installations and OAuth states (the Slack plug-in's own tables) on SQLite and
PostgreSQL, through slack_sdk's async interfaces: the latest installation wins, workspaces and
apps are apart, a user's installation carries the workspace's bot, deletes remove what they
name, a state is used once and only before it expires (by the injected clock)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.oauth.installation_store.models.installation import Installation

from adapters.slack.installations import StoreInstallations, StoreStates
from adapters.slack.tables import TABLES
from bot.store import Database
from bot.store.audit import recent
from bot.testing.clock import FakeClock

CLIENT = "1111.2222"


@pytest.fixture
async def db(store_url: str, store_schema: str | None) -> AsyncIterator[Database]:
    """The store with the Slack plug-in's own tables, which its branch makes on opening."""
    async with Database(store_url, schema=store_schema, plugins={"slack": TABLES}) as opened:
        yield opened


def installation(
    team: str, token: str, *, user: str = "U1", user_token: str | None = None
) -> Installation:
    return Installation(
        app_id="A1",
        team_id=team,
        team_name=f"team {team}",
        bot_token=token,
        bot_id=f"B{team}",
        bot_user_id=f"U{team}BOT",
        bot_scopes="chat:write,commands",
        user_id=user,
        user_token=user_token,
        installed_at=1_617_900_000.0,
    )


async def test_the_latest_installation_of_each_workspace_wins(db: Database) -> None:
    store = StoreInstallations(db, CLIENT, FakeClock())
    assert await store.async_find_bot(enterprise_id=None, team_id="TA") is None
    await store.async_save(installation("TA", "xoxb-a-1"))
    await store.async_save(installation("TB", "xoxb-b-1"))
    await store.async_save(installation("TA", "xoxb-a-2", user="U2"))

    bot = await store.async_find_bot(enterprise_id=None, team_id="TA")
    assert bot is not None
    assert (bot.bot_token, bot.bot_id, bot.bot_user_id) == ("xoxb-a-2", "BTA", "UTABOT")
    assert bot.bot_scopes == ["chat:write", "commands"]
    assert bot.installed_at == 1_617_900_000.0
    other = await store.async_find_bot(enterprise_id=None, team_id="TB")
    assert other is not None
    assert other.bot_token == "xoxb-b-1"
    # Another app (client id) on the same store sees nothing of this one's.
    stranger = StoreInstallations(db, "9999.0000", FakeClock())
    assert await stranger.async_find_bot(enterprise_id=None, team_id="TA") is None

    latest = await store.async_find_installation(enterprise_id=None, team_id="TA")
    assert latest is not None
    assert latest.user_id == "U2"


async def test_a_users_installation_carries_the_workspaces_latest_bot(db: Database) -> None:
    store = StoreInstallations(db, CLIENT, FakeClock())
    await store.async_save(installation("TA", "xoxb-a-1", user="U1", user_token="xoxp-1"))
    await store.async_save(installation("TA", "xoxb-a-2", user="U2"))
    mine = await store.async_find_installation(enterprise_id=None, team_id="TA", user_id="U1")
    assert mine is not None
    assert (mine.user_id, mine.user_token, mine.bot_token) == ("U1", "xoxp-1", "xoxb-a-2")
    assert (
        await store.async_find_installation(enterprise_id=None, team_id="TA", user_id="U9") is None
    )


async def test_deletes_remove_what_they_name(db: Database) -> None:
    store = StoreInstallations(db, CLIENT, FakeClock())
    for team in ("TA", "TB"):
        await store.async_save(installation(team, f"xoxb-{team}", user="U1"))
        await store.async_save(installation(team, f"xoxb-{team}", user="U2"))

    await store.async_delete_installation(enterprise_id=None, team_id="TA", user_id="U1")
    assert (
        await store.async_find_installation(enterprise_id=None, team_id="TA", user_id="U1") is None
    )
    assert await store.async_find_installation(enterprise_id=None, team_id="TA", user_id="U2")
    await store.async_delete_bot(enterprise_id=None, team_id="TA")
    assert await store.async_find_bot(enterprise_id=None, team_id="TA") is None
    assert await store.async_find_installation(enterprise_id=None, team_id="TA") is not None

    await store.async_delete_all(enterprise_id=None, team_id="TB")
    assert await store.async_find_bot(enterprise_id=None, team_id="TB") is None
    assert await store.async_find_installation(enterprise_id=None, team_id="TB") is None
    assert await store.async_find_installation(enterprise_id=None, team_id="TA") is not None

    async with db.connect() as conn:
        audited = [(e.actor, e.action, e.detail) for e in reversed(await recent(conn))]
    assert audited == [
        *(
            (
                f"slack:{team}/{user}",
                "slack install",
                f"slack install in the Slack workspace {team} (app {CLIENT})",
            )
            for team in ("TA", "TB")
            for user in ("U1", "U2")
        ),
        (
            "slack:TA/U1",
            "slack user token revoked",
            f"slack user token revoked in the Slack workspace TA (app {CLIENT})",
        ),
        (
            "slack:TA",
            "slack bot token revoked",
            f"slack bot token revoked in the Slack workspace TA (app {CLIENT})",
        ),
        (
            "slack:TB",
            "slack uninstall",
            f"slack uninstall in the Slack workspace TB (app {CLIENT})",
        ),
    ]
    assert not any("xoxb" in detail for _, _, detail in audited)


async def test_a_state_is_used_once_and_only_before_it_expires(db: Database) -> None:
    clock = FakeClock()
    states = StoreStates(db, clock, seconds=600)
    first, second, third = [await states.async_issue() for _ in range(3)]
    assert len({first, second, third}) == 3
    assert await states.async_consume(first)
    assert not await states.async_consume(first)  # used up
    assert not await states.async_consume("never-issued")
    assert not await states.async_consume("")
    clock.advance(599)
    assert await states.async_consume(second)
    clock.advance(1)
    assert not await states.async_consume(third)  # 600 s after it was issued: expired
