"""What the Slack adapter remembers, and for how long: users.info answers (is this user an
admin of that workspace?) for ``admin_cache_seconds`` on the context's clock, and only so many
of them, however many workspaces and users ask (the real slack_sdk client against FakeSlack);
the latest ``SEEN_EVENTS`` event ids, to drop Slack's redeliveries."""

from __future__ import annotations

from dataclasses import replace

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.commands import ADMIN_LOOKUPS_KEPT, SEEN_EVENTS, SlackCommands
from adapters.slack.settings import SlackSettings
from bot.testing.clock import FakeClock
from tests.adapters.test_slack import VirtualTime
from tests.adapters.test_slack import fake as fake
from tests.adapters.test_slack import vt as vt
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import bare_context

TTL = 300.0


def commands(fake: FakeSlack, clock: FakeClock, *, kept: int = ADMIN_LOOKUPS_KEPT) -> SlackCommands:
    """The adapter's command half, its clock the context's (no ``monotonic`` given)."""
    settings = SlackSettings(api_base=fake.api_url, admin_workspaces=frozenset({fake.team_id}))
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url, retry_handlers=[])
    context = replace(bare_context(), clock=clock)
    return SlackCommands(
        client,
        settings,
        context,
        admin_cache_seconds=TTL,
        history_limit=200,
        admin_lookups_kept=kept,
    )


async def test_an_answer_is_trusted_for_the_ttl_and_asked_again_after_it(
    fake: FakeSlack, vt: VirtualTime
) -> None:
    clock = vt.clock
    ada = fake.add_user("ada", is_admin=True)
    slack = commands(fake, clock)
    assert await slack.is_workspace_admin(ada, fake.team_id)
    clock.advance(TTL - 0.1)
    assert await slack.is_workspace_admin(ada, fake.team_id)
    assert len(fake.calls_to("users.info")) == 1
    clock.advance(0.1)  # the answer is TTL seconds old: asked again
    fake.fail_next("users.info")  # and Slack failing then fails closed, remembered by no one
    assert not await slack.is_workspace_admin(ada, fake.team_id)
    assert await slack.is_workspace_admin(ada, fake.team_id)
    assert len(fake.calls_to("users.info")) == 3


async def test_the_cache_stays_within_its_bound_across_workspaces_and_users(
    fake: FakeSlack, vt: VirtualTime
) -> None:
    clock = vt.clock
    teams = [fake.team_id, *(fake.add_workspace(f"team-{n}") for n in range(3))]
    asks = [
        (fake.add_user(f"u{t}-{n}", is_admin=n % 2 == 0, team_id=team), team, n % 2 == 0)
        for t, team in enumerate(teams)
        for n in range(10)
    ]
    asks += [(user, teams[0], False) for user, _, _ in asks[10:20]]  # an admin elsewhere: not here
    slack = commands(fake, clock, kept=8)
    assert [await slack.is_workspace_admin(u, team) for u, team, _ in asks] == [
        admin for _, _, admin in asks
    ]
    assert len(fake.calls_to("users.info")) == 50
    user, team, _ = asks[-9]  # ninth latest: forgotten
    await slack.is_workspace_admin(user, team)
    assert len(fake.calls_to("users.info")) == 51
    for user, team, _ in asks[-7:]:  # the seven latest are kept (the eighth went for it)
        await slack.is_workspace_admin(user, team)
    assert len(fake.calls_to("users.info")) == 51


async def test_the_latest_event_ids_are_remembered_and_a_repeat_counts_as_recent(
    fake: FakeSlack, vt: VirtualTime
) -> None:
    clock = vt.clock
    slack = commands(fake, clock)
    assert [slack.first_delivery(f"Ev{n}") for n in range(SEEN_EVENTS)] == [True] * SEEN_EVENTS
    assert not slack.first_delivery("Ev0")  # a redelivery: dropped, and now the latest seen
    assert slack.first_delivery("Ev-new")  # one more: the least recently seen (Ev1) goes
    assert not slack.first_delivery("Ev0")
    assert slack.first_delivery("Ev1")
    assert slack.first_delivery("")  # no id: never dropped
    assert slack.first_delivery("")
