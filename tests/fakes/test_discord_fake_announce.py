"""The fake Discord's announcement channels, over raw REST: following needs Manage Webhooks in
the follower and an announcement channel to follow; a crosspost copies the message into every
follower with one request, once (40033 after), within the hourly bound (429 beyond it); deleting
the follower webhook ends the follow."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from bot.testing.clock import FakeClock
from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.discord_fake.models import FLAG_CROSSPOSTED, FLAG_IS_CROSSPOST, MANAGE_WEBHOOKS

TOKEN = "fake-token"


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(token=TOKEN, clock=FakeClock().monotonic, publish_limit=2) as fake:
        yield fake


async def call(fake: FakeDiscord, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bot {TOKEN}"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.request(method, fake.base_url + path, json=body) as response,
    ):
        data = await response.json(content_type=None) if response.status != 204 else None
        return response.status, data


async def test_following_publishing_and_its_limits(fake: FakeDiscord) -> None:
    home = fake.add_guild("Home")
    news = fake.add_channel(home, "news", kind=5)
    text = fake.add_channel(home, "text")
    other = fake.add_guild("Other")
    there = fake.add_channel(other, "follows")
    third = fake.add_channel(fake.add_guild("Third"), "follows")
    follow = {"webhook_channel_id": str(there)}

    status, body = await call(fake, "POST", f"/channels/{news}/followers", follow)
    assert (status, body["code"]) == (403, 50013)  # no Manage Webhooks in the follower
    fake.grant_bot(other, MANAGE_WEBHOOKS)
    status, body = await call(fake, "POST", f"/channels/{text}/followers", follow)
    assert (status, body["code"]) == (400, 50024)  # not an announcement channel
    status, body = await call(fake, "POST", f"/channels/{news}/followers", follow)
    assert status == 200
    assert body["channel_id"] == str(news)
    hook = int(body["webhook_id"])
    fake.follow(news, third)  # through Discord's own menu
    assert fake.followers(news) == sorted([there, third])

    sent = []
    for _ in range(3):
        status, msg = await call(fake, "POST", f"/channels/{news}/messages", {"content": "x"})
        assert status == 200
        sent.append(int(msg["id"]))
    status, body = await call(fake, "POST", f"/channels/{text}/messages", {"content": "y"})
    status, body = await call(fake, "POST", f"/channels/{text}/messages/{body['id']}/crosspost")
    assert (status, body["code"]) == (400, 50024)

    before = len(fake.requests)
    status, body = await call(fake, "POST", f"/channels/{news}/messages/{sent[0]}/crosspost")
    assert status == 200
    assert body["flags"] & FLAG_CROSSPOSTED
    assert len(fake.requests) == before + 1  # one request, every follower
    for channel in (there, third):
        (copy,) = fake.messages(channel)
        assert copy.flags & FLAG_IS_CROSSPOST
        assert copy.message_reference is not None
        assert copy.message_reference["message_id"] == str(sent[0])
    status, body = await call(fake, "POST", f"/channels/{news}/messages/{sent[0]}/crosspost")
    assert (status, body["code"]) == (400, 40033)  # published already (and counted)
    status, body = await call(fake, "POST", f"/channels/{news}/messages/{sent[1]}/crosspost")
    assert status == 429  # two an hour here
    assert body["retry_after"] > 3000
    assert len(fake.messages(there)) == 1

    status, _ = await call(fake, "DELETE", f"/webhooks/{hook}")
    assert status == 204
    assert fake.followers(news) == [third]
    status, body = await call(fake, "DELETE", f"/webhooks/{hook}")
    assert (status, body["code"]) == (404, 10015)
