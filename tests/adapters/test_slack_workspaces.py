"""Which bot speaks in which workspace (``adapters.slack.workspaces``), on the real store: the
workspace's installation, else the single token; lookups cached for a while by the injected
clock, in a bounded cache; an uninstall forgotten at once; a workspace with no bot fails its
deliveries permanently, saying why."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.installations import StoreInstallations
from adapters.slack.tables import TABLES
from adapters.slack.workspaces import Speaker, Workspaces
from bot.errors import PermanentDeliveryError
from bot.store import Database
from bot.testing.clock import FakeClock


@pytest.fixture
async def db(store_url: str, store_schema: str | None) -> AsyncIterator[Database]:
    """The store with the Slack plug-in's own tables, which its branch makes on opening."""
    async with Database(store_url, schema=store_schema, plugins={"slack": TABLES}) as opened:
        yield opened


class CountedInstallations(StoreInstallations):
    """The real store, counting how often a bot is looked up."""

    lookups = 0

    async def async_find_bot(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        is_enterprise_install: bool | None = False,
    ) -> Bot | None:
        self.lookups += 1
        return await super().async_find_bot(
            enterprise_id=enterprise_id,
            team_id=team_id,
            is_enterprise_install=is_enterprise_install,
        )


def client(token: str | None) -> AsyncWebClient:
    return AsyncWebClient(token=token, base_url="http://127.0.0.1:9/api/", retry_handlers=[])


def installed(team: str) -> Installation:
    return Installation(team_id=team, bot_token=f"xoxb-{team}", bot_id=f"B{team}", user_id="U1")


def workspaces(
    store: StoreInstallations, clock: FakeClock, *, single: Speaker | None = None, size: int = 8
) -> Workspaces:
    return Workspaces(
        single=single,
        installations=store,
        make_client=client,
        monotonic=clock.monotonic,
        install_hint="; install it again at /slack/install",
        ttl=300,
        size=size,
    )


async def test_each_workspace_gets_its_own_bot_cached_for_a_while(db: Database) -> None:
    clock = FakeClock()
    store = CountedInstallations(db, "1.2", clock)
    await store.async_save(installed("TA"))
    await store.async_save(installed("TB"))
    chooser = workspaces(store, clock)

    a, b = await chooser.find("TA"), await chooser.find("TB")
    assert a is not None
    assert b is not None
    assert (a.client.token, a.bot_id, b.client.token) == ("xoxb-TA", "BTA", "xoxb-TB")
    assert await chooser.find("TA") is a
    assert store.lookups == 2
    clock.advance(301)
    again = await chooser.find("TA")
    assert again is not None
    assert again is not a
    assert store.lookups == 3


async def test_an_uninstall_is_forgotten_at_once_and_fails_deliveries_permanently(
    db: Database,
) -> None:
    clock = FakeClock()
    store = CountedInstallations(db, "1.2", clock)
    await store.async_save(installed("TA"))
    chooser = workspaces(store, clock)
    assert await chooser.speaker("TA", "slack post to slack:TA/C1")

    await store.async_delete_all(enterprise_id=None, team_id="TA")
    assert await chooser.find("TA") is not None  # still cached...
    chooser.forget("TA")  # ...until the app_uninstalled event says so
    with pytest.raises(PermanentDeliveryError) as failed:
        await chooser.speaker("TA", "slack post to slack:TA/C1")
    assert str(failed.value) == (
        "slack post to slack:TA/C1: tallybot is not installed in the Slack workspace TA (the "
        "app was uninstalled there or its token revoked); install it again at /slack/install"
    )


async def test_a_workspace_without_an_installation_falls_back_to_the_single_token(
    db: Database,
) -> None:
    """The single token serves its own workspace (auth.test's) only (issue 28, part 2), and
    no more once that workspace removed the app."""
    clock = FakeClock()
    single = Speaker(client("xoxb-single"), "B0", "U0", "THOME")
    chooser = workspaces(StoreInstallations(db, "1.2", clock), clock, single=single)
    assert await chooser.find("THOME") is single
    assert await chooser.speaker("THOME", "here") is single
    assert await chooser.find("TOTHER") is None  # another workspace's token: never
    with pytest.raises(PermanentDeliveryError, match="not installed in the Slack workspace"):
        await chooser.speaker("TOTHER", "there")
    chooser.removed("THOME")
    assert await chooser.find("THOME") is None


async def test_a_workspace_without_a_bot_is_looked_up_again_soon(db: Database) -> None:
    clock = FakeClock()
    store = CountedInstallations(db, "1.2", clock)
    chooser = workspaces(store, clock)
    assert await chooser.find("TA") is None
    await store.async_save(installed("TA"))  # by another instance on the same store
    clock.advance(9)
    assert await chooser.find("TA") is None
    clock.advance(2)  # a miss is kept 10 s, not the 300 s of a bot
    found = await chooser.find("TA")
    assert found is not None
    assert found.client.token == "xoxb-TA"


async def test_the_cache_is_bounded(db: Database) -> None:
    clock = FakeClock()
    store = CountedInstallations(db, "1.2", clock)
    chooser = workspaces(store, clock, size=2)
    for team in ("TA", "TB", "TC"):
        await store.async_save(installed(team))
        await chooser.find(team)
    assert store.lookups == 3
    await chooser.find("TC")
    await chooser.find("TB")
    assert store.lookups == 3  # the latest two are kept...
    await chooser.find("TA")
    assert store.lookups == 4  # ...the oldest was dropped
