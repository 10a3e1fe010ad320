"""The Slack adapter keeps one HTTP session for its life: every Web API call (auth.test, the
Socket Mode URL, posts, edits, the history read) comes on one kept-alive TCP connection, counted
at FakeSlack, instead of a new connection per call (slack_sdk's default without a session)."""

from __future__ import annotations

from pathlib import Path

from adapters.slack.adapter import SlackAdapter
from bot.commands.request import Reply, Request
from bot.domain.message import Notice
from bot.domain.subscription import ChannelRef, Platform
from tests.adapters.test_slack import adapter_for, config
from tests.fakes.slack_fake import FakeSlack
from tests.helpers import T0

POSTS = 20


async def _never(request: Request) -> Reply:
    raise AssertionError("no command is sent in these tests")


async def test_every_web_api_call_comes_on_one_connection(tmp_path: Path) -> None:
    async with FakeSlack(post_burst=POSTS) as fake:
        channel = fake.add_channel("news")
        ref = ChannelRef(Platform("slack"), fake.team_id, channel)
        async with adapter_for(fake, config(tmp_path, fake), _never) as adapter:
            posted = [await adapter.post(ref, Notice(f"n{n}"), key=f"tb{n}") for n in range(POSTS)]
            await adapter.edit(ref, posted[0], Notice("n0, edited"))
            found = await adapter.find_posted(ref, ["tb0", "tb1"], since=T0)
        assert set(found) == {"tb0", "tb1"}
        calls = [c.method for c in fake.calls]
        assert calls.count("chat.postMessage") == POSTS
        assert {"auth.test", "apps.connections.open", "chat.update"} <= set(calls)
        assert fake.api_connections == 1


async def test_the_session_is_closed_with_the_adapter(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        adapter: SlackAdapter = adapter_for(fake, config(tmp_path, fake), _never)
        async with adapter:
            http = adapter.http
            assert http is not None
            assert adapter.client.session is http
            assert adapter.bolt.client.session is http
        assert http.closed
        assert adapter.http is None
