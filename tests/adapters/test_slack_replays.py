"""Slack HTTP-mode requests are carried out once across instances (issue 27, part 4): with two
instances on one PostgreSQL store, a captured signed request replayed to the other instance
inside its five minutes, or the same request re-signed (its ``trigger_id`` again), is dropped
there too. Two apps in one process, the real slack-bolt against FakeSlack."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_bolt.request.async_request import AsyncBoltRequest
from sqlalchemy import text

from adapters.slack.adapter import SlackAdapter
from adapters.slack.replays import Replays
from bot.commands.request import Reply, Request
from bot.domain.subscription import Platform
from bot.runtime import plugins
from bot.runtime.app import App
from bot.settings.loader import Config
from bot.settings.secrets import Secret
from bot.store import Database, request_receipts
from bot.testing.clock import FakeClock
from tests.adapters.test_slack import config
from tests.conftest import PG_URL, _pg_execute, _require_postgres
from tests.fakes.slack_fake import FakeSlack


@asynccontextmanager
async def instance(
    fake: FakeSlack, cfg: Config, schema: str, handled: list[str]
) -> AsyncIterator[tuple[App, SlackAdapter]]:
    """One instance of the bot on the shared store, its Slack adapter built as its plug-in
    would (the store in its context), the commands it carries out noted in ``handled``."""
    made: list[SlackAdapter] = []

    def factory(commands: Any) -> SlackAdapter:
        secrets = {
            "SLACK_BOT_TOKEN": Secret("SLACK_BOT_TOKEN", fake.bot_token),
            "SLACK_SIGNING_SECRET": Secret("SLACK_SIGNING_SECRET", fake.signing_secret),
        }

        async def handle(request: Request) -> Reply:
            handled.append(request.text)
            reply: Reply = await commands.handle(request)
            return reply

        context = plugins.context(cfg, Platform("slack"), commands, secrets)
        made.append(SlackAdapter(cfg.settings("slack"), replace(context, handle=handle)))
        return made[-1]

    app = App(cfg, {Platform("slack"): factory}, poll=False, schema=schema)
    async with app:
        yield app, made[0]


@pytest.mark.postgres
async def test_a_replayed_request_is_dropped_by_another_instance_too(tmp_path: Path) -> None:
    await _require_postgres()
    schema = f"test_{uuid.uuid4().hex[:16]}"
    handled: list[str] = []
    try:
        async with FakeSlack() as fake, AsyncExitStack() as stack:
            channel, user = fake.add_channel("general"), fake.add_user("ada")
            cfg = replace(config(tmp_path, fake, mode="http"), store_url=PG_URL)
            app_a, a = await stack.enter_async_context(instance(fake, cfg, schema, handled))
            _, b = await stack.enter_async_context(instance(fake, cfg, schema, handled))
            urls = [f"http://127.0.0.1:{x.http_port}/slack/events" for x in (a, b)]
            payload = fake.slash_command_payload(
                command="/count", text="list", user_id=user, channel_id=channel
            )
            body = urlencode(payload).encode()
            form = {"Content-Type": "application/x-www-form-urlencoded"}
            captured = {**fake.signed_headers(body), **form}
            resigned = {
                **fake.signed_headers(body, timestamp=int(time.time()) - 1),
                **form,
                "X-Slack-Retry-Num": "1",
            }
            statuses = []
            async with aiohttp.ClientSession() as session:
                for url, headers in [
                    (urls[0], captured),
                    (urls[1], captured),  # the same request, to the other instance
                    (urls[1], resigned),  # re-signed: its trigger_id again
                    (urls[0], captured),
                ]:
                    async with session.post(url, data=body, headers=headers) as resp:
                        statuses.append(resp.status)
            other = await fake.send_slash_command_http(
                urls[1], command="/count", text="status", user_id=user, channel_id=channel
            )
            await fake.wait_for(lambda: len(handled) >= 2)
            # An event, and Slack's retry of it (re-signed, the same event_id) to the other.
            mention = {
                "type": "app_mention",
                "user": user,
                "channel": channel,
                "text": f"<@{fake.bot_user_id}> help",
            }
            for n, url in enumerate(urls):
                sent = await fake.send_event_http(
                    url, mention, retry_attempt=n, retry_reason="http_timeout" * n, event_id="Ev1"
                )
                assert sent.status == 200
            await fake.wait_for(lambda: len(handled) >= 3)
            for x in (a, b):
                await x.finish_commands()
            async with app_a.db.connect() as conn:
                kept = await request_receipts.count(conn)
    finally:
        await _pg_execute(PG_URL, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    assert statuses == [200, 200, 200, 200]
    assert other.status == 200
    assert handled == ["list", "status", "help"]
    assert kept == 5 + 3  # each signature seen (3 + 2) and each trigger_id (2) and event_id


async def test_while_the_store_fails_an_instance_remembers_requests_itself(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    url = f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"
    async with Database(url) as db:
        replays = Replays(clock, db)
        body = urlencode({"command": "/count", "text": "list", "trigger_id": "1.2.3"})
        headers = {"x-slack-signature": "v0=ab", "x-slack-request-timestamp": "1"}
        asked = AsyncBoltRequest(body=body, headers=headers)
        assert await replays.first(asked)
        assert not await replays.first(asked)  # from the store
        async with db.begin() as conn:
            await conn.execute(text("DROP TABLE request_receipts"))  # the store fails
        again = AsyncBoltRequest(body=body.replace("1.2.3", "4.5.6"), headers={})
        assert [await replays.first(again) for _ in range(2)] == [True, False]
    assert "request receipts not kept in the store" in caplog.text
