"""FakeSlack driven by the real slack_sdk / slack_bolt clients."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.testing.clock import FakeClock
from tests.fakes.slack_fake import FakeSlack, load_manifest

TS_RE = re.compile(r"^\d{10}\.\d{6}$")
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # slack_sdk reads HTTPS_PROXY & co. and ignores NO_PROXY: loopback would go to the proxy.
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)


SHIPPED = load_manifest()
WITH_READ = replace(SHIPPED, scopes=SHIPPED.scopes | {"channels:read"})
"""The shipped app, and conversations.info too (which tallybot does not call)."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(manifest=WITH_READ) as f:
        yield f


def web_client(fake: FakeSlack, **kwargs: Any) -> AsyncWebClient:
    return AsyncWebClient(token=fake.bot_token, base_url=fake.api_url, **kwargs)


async def slack_error(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as info:
        await call
    return info.value


@asynccontextmanager
async def socket_app(fake: FakeSlack, app: AsyncApp) -> AsyncIterator[AsyncSocketModeHandler]:
    handler = AsyncSocketModeHandler(app, fake.app_token)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    try:
        await fake.wait_for(lambda: len(fake.live_socket_connections) == 1)
        yield handler
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]
        await fake.wait_for(lambda: not fake.live_socket_connections)


# ---------------------------------------------------------------- Web API


async def test_post_update_delete_are_recorded(fake: FakeSlack) -> None:
    channel = fake.add_channel("tallies")
    client = web_client(fake)
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*yes* 1"}}]
    metadata = {"event_type": "tally_posted", "event_payload": {"poll": "p1"}}

    first = await client.chat_postMessage(
        channel=channel, text="yes 1", blocks=blocks, metadata=metadata
    )
    second = await client.chat_postMessage(channel="#tallies", text="other")
    await client.chat_update(channel=channel, ts=first["ts"], text="yes 2")
    await client.chat_delete(channel=channel, ts=second["ts"])

    assert [first["channel"], second["channel"]] == [channel, channel]
    assert TS_RE.match(first["ts"])
    assert TS_RE.match(second["ts"])
    assert float(second["ts"]) > float(first["ts"])
    assert first["message"]["metadata"] == metadata
    assert first["message"]["bot_id"] == fake.bot_id
    kept, gone = fake.messages(channel)
    assert (kept.ts, kept.text, kept.edited, kept.deleted) == (first["ts"], "yes 2", True, False)
    assert (kept.blocks, kept.metadata) == (blocks, metadata)  # kept when not re-sent
    assert [r.text for r in kept.revisions] == ["yes 1"]
    assert (gone.text, gone.deleted, gone.edited) == ("other", True, False)
    methods = [c.method for c in fake.calls]
    assert methods == ["chat.postMessage", "chat.postMessage", "chat.update", "chat.delete"]
    assert all(c.ok and c.token == fake.bot_token for c in fake.calls)
    assert fake.calls[2].args == {"channel": channel, "ts": first["ts"], "text": "yes 2"}


ErrorCase = Callable[[FakeSlack, AsyncWebClient, str], Any]


def _blocks(n: int) -> list[dict[str, Any]]:
    return [{"type": "divider"} for _ in range(n)]


def _section(text_len: int = 10, fields: int = 0) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "section", "text": {"type": "mrkdwn", "text": "x" * text_len}}
    if fields:
        block["fields"] = [{"type": "plain_text", "text": "f"} for _ in range(fields)]
    return [block]


ERROR_CASES: list[tuple[str, ErrorCase]] = [
    (
        "invalid_auth",
        lambda f, c, ch: AsyncWebClient(token="xoxb-wrong", base_url=f.api_url).auth_test(),
    ),
    (
        "not_authed",
        lambda f, c, ch: AsyncWebClient(base_url=f.api_url).chat_postMessage(channel=ch, text="x"),
    ),
    (
        "not_allowed_token_type",
        lambda f, c, ch: AsyncWebClient(token=f.app_token, base_url=f.api_url).chat_postMessage(
            channel=ch, text="x"
        ),
    ),
    ("not_allowed_token_type", lambda f, c, ch: c.apps_connections_open(app_token=f.bot_token)),
    ("channel_not_found", lambda f, c, ch: c.chat_postMessage(channel="C404", text="x")),
    ("msg_too_long", lambda f, c, ch: c.chat_postMessage(channel=ch, text="x" * 40_001)),
    (
        "invalid_blocks",
        lambda f, c, ch: c.chat_postMessage(channel=ch, text="t", blocks=_blocks(51)),
    ),
    (
        "invalid_blocks",
        lambda f, c, ch: c.chat_postMessage(channel=ch, text="t", blocks=_section(3001)),
    ),
    (
        "invalid_blocks",
        lambda f, c, ch: c.chat_postMessage(channel=ch, text="t", blocks=_section(fields=11)),
    ),
    (
        "invalid_blocks",
        lambda f, c, ch: c.chat_postMessage(
            channel=ch,
            text="t",
            blocks=[{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}],
        ),
    ),
    (
        "invalid_blocks",
        lambda f, c, ch: c.chat_postMessage(
            channel=ch,
            text="t",
            blocks=[{"type": "context", "elements": [{"type": "mrkdwn", "text": "e"}] * 11}],
        ),
    ),
    # Straight api_call: slack_sdk's chat_postMessage warns (UserWarning) before sending.
    ("no_text", lambda f, c, ch: c.api_call("chat.postMessage", json={"channel": ch})),
    ("message_not_found", lambda f, c, ch: c.chat_update(channel=ch, ts="1.000001", text="x")),
    ("message_not_found", lambda f, c, ch: c.chat_delete(channel=ch, ts="1.000001")),
    ("user_not_found", lambda f, c, ch: c.users_info(user="U404")),
    ("user_not_found", lambda f, c, ch: c.chat_postEphemeral(channel=ch, user="U404", text="x")),
    (
        "invalid_metadata_schema",
        lambda f, c, ch: c.chat_postMessage(channel=ch, text="x", metadata={"event_type": "e"}),
    ),
    ("unknown_method", lambda f, c, ch: c.api_call("chat.postMessageX", json={"channel": ch})),
]


@pytest.mark.parametrize(("error", "call"), ERROR_CASES)
async def test_slack_errors(fake: FakeSlack, error: str, call: ErrorCase) -> None:
    channel = fake.add_channel("general")
    client = web_client(fake)
    exc = await slack_error(call(fake, client, channel))
    assert exc.response.status_code == 200
    assert exc.response["ok"] is False
    assert exc.response["error"] == error
    assert fake.calls[-1].error == error
    assert fake.messages(channel) == []


async def test_channel_state_errors(fake: FakeSlack) -> None:
    archived, kicked, deleted = (fake.add_channel(n) for n in ("old", "kicked", "gone"))
    private = fake.add_channel("secret", is_private=True)
    client = web_client(fake)
    posted = await client.chat_postMessage(channel=kicked, text="before")
    fake.archive_channel(archived)
    fake.kick_bot(kicked)
    fake.kick_bot(private)
    fake.delete_channel(deleted)

    errors = [
        (await slack_error(client.chat_postMessage(channel=archived, text="x"))).response["error"],
        (await slack_error(client.chat_postMessage(channel=kicked, text="x"))).response["error"],
        (await slack_error(client.chat_update(channel=kicked, ts=posted["ts"], text="y"))).response[
            "error"
        ],
        (await slack_error(client.conversations_history(channel=kicked))).response["error"],
        (await slack_error(client.chat_postMessage(channel=private, text="x"))).response["error"],
        (await slack_error(client.chat_postMessage(channel=deleted, text="x"))).response["error"],
    ]
    assert errors == [
        "is_archived",
        "not_in_channel",
        "not_in_channel",
        "not_in_channel",
        "channel_not_found",
        "channel_not_found",
    ]
    info = await client.conversations_info(channel=archived)
    assert (info["channel"]["id"], info["channel"]["is_archived"]) == (archived, True)
    assert [m.text for m in fake.messages(kicked)] == ["before"]


async def test_chat_update_of_deleted_message(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    client = web_client(fake)
    posted = await client.chat_postMessage(channel=channel, text="x")
    await client.chat_delete(channel=channel, ts=posted["ts"])
    exc = await slack_error(client.chat_update(channel=channel, ts=posted["ts"], text="y"))
    assert exc.response["error"] == "message_not_found"
    assert fake.messages(channel)[0].text == "x"


async def test_users_info_and_ephemeral(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    admin = fake.add_user("ada", is_admin=True)
    owner = fake.add_user("olga", is_owner=True)
    client = web_client(fake)
    ada = (await client.users_info(user=admin))["user"]
    olga = (await client.users_info(user=owner))["user"]
    assert (ada["id"], ada["name"], ada["is_admin"], ada["is_owner"]) == (admin, "ada", True, False)
    assert (olga["is_admin"], olga["is_owner"]) == (False, True)
    res = await client.chat_postEphemeral(channel=channel, user=admin, text="only you")
    assert TS_RE.match(res["message_ts"])
    assert [(e.channel, e.user, e.text) for e in fake.ephemerals] == [(channel, admin, "only you")]
    assert fake.messages(channel) == []  # ephemeral messages are not channel history
    auth = await client.auth_test()
    assert (auth["team_id"], auth["user_id"], auth["bot_id"]) == (
        fake.team_id,
        fake.bot_user_id,
        fake.bot_id,
    )


# ----------------------------------------------------------- rate limits


async def test_post_bucket_with_manual_clock() -> None:
    clock = FakeClock()
    async with FakeSlack(clock=clock.monotonic, post_per_channel_per_s=1.0, post_burst=3) as fake:
        busy, quiet = fake.add_channel("busy"), fake.add_channel("quiet")
        client = web_client(fake)
        for i in range(3):
            await client.chat_postMessage(channel=busy, text=f"m{i}")
        exc = await slack_error(client.chat_postMessage(channel=busy, text="m3"))
        await client.chat_postMessage(channel=quiet, text="other channel has its own bucket")
        clock.advance(0.5)
        exc_half = await slack_error(client.chat_postMessage(channel=busy, text="m3"))
        clock.advance(0.5)
        await client.chat_postMessage(channel=busy, text="m3")

    assert exc.response.status_code == 429
    assert exc.response["error"] == "ratelimited"
    assert exc.response.headers["Retry-After"] == "1"
    assert exc_half.response.headers["Retry-After"] == "1"  # 0.5 s, announced in whole seconds
    assert fake.count_429 == 2
    assert [m.text for m in fake.messages(busy)] == ["m0", "m1", "m2", "m3"]


async def test_update_tier_limit_with_manual_clock() -> None:
    clock = FakeClock()
    async with FakeSlack(clock=clock.monotonic, update_per_min=3) as fake:
        channel = fake.add_channel("general")
        client = web_client(fake)
        ts = (await client.chat_postMessage(channel=channel, text="v0"))["ts"]
        for i in range(1, 4):
            clock.advance(1)
            await client.chat_update(channel=channel, ts=ts, text=f"v{i}")
        exc = await slack_error(client.chat_update(channel=channel, ts=ts, text="v4"))
        clock.advance(57)
        exc_later = await slack_error(client.chat_update(channel=channel, ts=ts, text="v4"))
        clock.advance(1)
        await client.chat_update(channel=channel, ts=ts, text="v4")

    assert exc.response.status_code == 429
    assert exc.response.headers["Retry-After"] == "58"
    assert exc_later.response.headers["Retry-After"] == "1"
    assert fake.count_429 == 2
    assert fake.messages(channel)[0].text == "v4"
    assert fake.messages(channel)[0].edit_count == 4


async def test_burst_with_rate_limit_retry_handler_delivers_each_message_once() -> None:
    async with FakeSlack(post_per_channel_per_s=5.0, post_burst=2, retry_after=0) as fake:
        channel = fake.add_channel("burst")
        retry = AsyncRateLimitErrorRetryHandler(max_retry_count=20)
        client = web_client(fake, retry_handlers=[retry])
        texts = [f"update {i}" for i in range(8)]
        results = await asyncio.gather(
            *(client.chat_postMessage(channel=channel, text=t) for t in texts)
        )

    assert all(r["ok"] for r in results)
    assert sorted(m.text for m in fake.messages(channel)) == sorted(texts)
    assert fake.count_429 >= 1
    posts = fake.calls_to("chat.postMessage")
    assert len(posts) == len(texts) + fake.count_429
    limited = [c for c in posts if c.status == 429]
    assert len(limited) == fake.count_429
    assert all(c.headers == {"Retry-After": "0"} for c in limited)
    assert all(c.response == {"ok": False, "error": "ratelimited"} for c in limited)


async def test_fail_next_server_error_then_recovers(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    client = web_client(fake)
    fake.fail_next("chat.postMessage", status=503, times=2)
    first = await slack_error(client.chat_postMessage(channel=channel, text="a"))
    second = await slack_error(client.chat_postMessage(channel=channel, text="a"))
    await client.chat_postMessage(channel=channel, text="a")
    assert first.response.status_code == 503
    assert second.response["error"] == "service_unavailable"
    assert [m.text for m in fake.messages(channel)] == ["a"]


async def test_lost_answer_is_retried_by_default_and_posts_twice(fake: FakeSlack) -> None:
    """slack_sdk retries a dropped connection once by default: no idempotency, two posts."""
    channel = fake.add_channel("general")
    client = web_client(fake)
    fake.fail_next("chat.postMessage", drop=True, commit=True)
    meta = {"event_type": "tally", "event_payload": {"poll": "p1", "rev": 1}}
    res = await client.chat_postMessage(channel=channel, text="tally", metadata=meta)

    assert res["ok"]
    assert [m.text for m in fake.messages(channel)] == ["tally", "tally"]
    history = await client.conversations_history(channel=channel, include_all_metadata=True)
    assert [m["metadata"] for m in history["messages"]] == [meta, meta]
    assert [c.response.get("dropped", False) for c in fake.calls_to("chat.postMessage")] == [
        True,
        False,
    ]


# ------------------------------------------------------ history and files


async def test_conversations_history_with_metadata_and_paging(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    user = fake.add_user("ada")
    client = web_client(fake)
    posted = []
    for i in range(3):
        meta = {"event_type": "tally", "event_payload": {"rev": i}}
        res = await client.chat_postMessage(channel=channel, text=f"r{i}", metadata=meta)
        posted.append(res["ts"])
    user_ts = fake.post_user_message(channel, user, "hi bot")
    await client.chat_delete(channel=channel, ts=posted[0])

    page1 = await client.conversations_history(channel=channel, include_all_metadata=True, limit=2)
    cursor = page1["response_metadata"]["next_cursor"]
    page2 = await client.conversations_history(
        channel=channel, include_all_metadata=True, limit=2, cursor=cursor
    )
    plain = await client.conversations_history(channel=channel)
    newer = await client.conversations_history(channel=channel, oldest=posted[1])

    assert [m["ts"] for m in page1["messages"]] == [user_ts, posted[2]]
    assert page1["has_more"] is True
    assert page1["messages"][1]["metadata"] == {"event_type": "tally", "event_payload": {"rev": 2}}
    assert "metadata" not in page1["messages"][0]  # the user's message has none
    assert [m["ts"] for m in page2["messages"]] == [posted[1]]
    assert page2["has_more"] is False
    assert all("metadata" not in m for m in plain["messages"])
    assert [m["ts"] for m in newer["messages"]] == [user_ts, posted[2]]
    assert page1["messages"][1]["bot_id"] == fake.bot_id
    assert page1["messages"][0]["user"] == user


async def test_files_upload_v2_is_recorded(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    client = web_client(fake)
    content = b"option,votes\nyes,3\nno,1\n"
    res = await client.files_upload_v2(
        channel=channel, content=content, filename="tally.csv", title="Tally", initial_comment="!"
    )

    assert res["file"]["name"] == "tally.csv"
    [upload] = fake.uploads
    assert (upload.filename, upload.title, upload.channel) == ("tally.csv", "Tally", channel)
    assert upload.length == upload.declared_length == len(content)
    assert (upload.data, upload.initial_comment) == (content, "!")
    assert [c.method for c in fake.calls] == [
        "files.getUploadURLExternal",
        "files.completeUploadExternal",
    ]


async def test_complete_upload_without_upload_fails(fake: FakeSlack) -> None:
    client = web_client(fake)
    url = await client.files_getUploadURLExternal(filename="a.txt", length=3)
    exc = await slack_error(client.files_completeUploadExternal(files=[{"id": url["file_id"]}]))
    assert exc.response["error"] == "file_not_found"
    assert fake.uploads == []


# ------------------------------------------------------------ Socket Mode


async def test_socket_mode_slash_command_ack_respond_say(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    user = fake.add_user("ada")
    app = AsyncApp(client=web_client(fake), signing_secret=fake.signing_secret)
    seen: list[dict[str, Any]] = []

    @app.command("/count")
    async def tally(ack: Any, respond: Any, say: Any, command: dict[str, Any]) -> None:
        await ack("counting...")
        seen.append(command)
        await respond("only for you")
        await respond(text="for everyone", response_type="in_channel")
        await say("said in channel")

    async with socket_app(fake, app):
        delivery = await fake.send_slash_command(
            command="/count", text="poll-1", user_id=user, channel_id=channel
        )
        await fake.wait_for(lambda: len(fake.messages(channel)) == 2)

    assert delivery.acked
    assert not delivery.late
    assert delivery.ack_payload == {"text": "counting..."}
    assert delivery.type == "slash_commands"
    assert delivery.envelope["accepts_response_payload"] is True
    [command] = seen
    assert (command["command"], command["text"], command["user_id"]) == ("/count", "poll-1", user)
    assert (command["channel_name"], command["team_id"]) == ("general", fake.team_id)
    assert command["response_url"] == delivery.response_url
    posts = fake.response_url_posts
    assert [(p.response_type, p.body["text"], p.status) for p in posts] == [
        ("ephemeral", "only for you", 200),
        ("in_channel", "for everyone", 200),
    ]
    assert sorted((m.source, m.text) for m in fake.messages(channel)) == [
        ("chat.postMessage", "said in channel"),
        ("response_url", "for everyone"),
    ]
    assert [c.method for c in fake.calls][:2] == ["apps.connections.open", "auth.test"]
    assert fake.calls[0].token == fake.app_token


async def test_socket_mode_app_mention_and_retry_headers(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    user = fake.add_user("ada")
    app = AsyncApp(client=web_client(fake), signing_secret=fake.signing_secret)
    seen: list[tuple[str, str | None]] = []

    @app.event("app_mention")
    async def mention(event: dict[str, Any], say: Any, request: Any) -> None:
        retry = request.headers.get("x-slack-retry-num")
        seen.append((event["text"], retry[0] if retry else None))
        await say(f"<@{event['user']}> counted")

    mention_event = {"type": "app_mention", "user": user, "text": f"<@{fake.bot_user_id}> hi"}
    mention_event["channel"] = channel
    async with socket_app(fake, app):
        first = await fake.send_event(mention_event, event_id="Ev001")
        retried = await fake.send_event(
            mention_event, retry_attempt=1, retry_reason="timeout", event_id="Ev001"
        )
        await fake.wait_for(lambda: len(fake.messages(channel)) == 2)

    assert (first.acked, retried.acked) == (True, True)
    assert first.ack_payload is None
    assert not first.late
    assert first.envelope["payload"]["event_id"] == retried.envelope["payload"]["event_id"]
    assert (retried.envelope["retry_attempt"], retried.envelope["retry_reason"]) == (1, "timeout")
    assert seen == [(mention_event["text"], "0"), (mention_event["text"], "1")]
    assert [m.text for m in fake.messages(channel)] == [f"<@{user}> counted"] * 2


async def test_socket_disconnect_makes_client_reconnect(fake: FakeSlack) -> None:
    channel = fake.add_channel("general")
    user = fake.add_user("ada")
    app = AsyncApp(client=web_client(fake), signing_secret=fake.signing_secret)

    @app.command("/count")
    async def tally(ack: Any) -> None:
        await ack()

    async with socket_app(fake, app):
        await fake.disconnect_socket()
        await fake.wait_for(
            lambda: len(fake.socket_connections) == 2 and len(fake.live_socket_connections) == 1
        )
        delivery = await fake.send_slash_command(
            command="/count", text="", user_id=user, channel_id=channel
        )
        old, new = fake.socket_connections
        assert (old.closed, old.draining, new.closed, new.draining) == (True, True, False, False)

    assert delivery.connection_id == new.id
    assert delivery.acked
    assert delivery.ack_payload is None
    assert len(fake.calls_to("apps.connections.open")) == 2


async def test_raw_socket_protocol_and_late_ack() -> None:
    clock = FakeClock()
    async with FakeSlack(clock=clock.monotonic, ack_clock=clock.monotonic) as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        opened = await web_client(fake).apps_connections_open(app_token=fake.app_token)
        async with asyncio.timeout(10), aiohttp.ClientSession() as session:
            async with session.ws_connect(opened["url"]) as ws:
                hello = await ws.receive_json()
                delivery = await fake.send_slash_command(
                    command="/count", text="t", user_id=user, channel_id=channel, ack_wait=0
                )
                envelope = await ws.receive_json()
                unacked_late = delivery.late
                clock.advance(3.5)
                await ws.send_json({"envelope_id": envelope["envelope_id"]})
                await ws.send_str("not json")
                await delivery.wait_ack()
                await fake.wait_for(lambda: len(fake.stray_socket_frames) == 1)
            with pytest.raises(aiohttp.WSServerHandshakeError):
                await session.ws_connect(opened["url"])  # tickets are single-use

    assert (hello["type"], hello["connection_info"]["app_id"]) == ("hello", fake.app_id)
    assert envelope["type"] == "slash_commands"
    assert set(envelope["payload"]) == {
        "token",
        "team_id",
        "team_domain",
        "channel_id",
        "channel_name",
        "user_id",
        "user_name",
        "command",
        "text",
        "api_app_id",
        "is_enterprise_install",
        "response_url",
        "trigger_id",
    }
    assert unacked_late
    assert (delivery.acked, delivery.ack_latency_s, delivery.late) == (True, 3.5, True)
    assert fake.stray_socket_frames == ["not json"]


# -------------------------------------------------------------- HTTP mode


async def test_http_mode_signed_slash_command() -> None:
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        app = AsyncApp(client=web_client(fake), signing_secret=fake.signing_secret)

        @app.command("/count")
        async def tally(ack: Any, respond: Any) -> None:
            await ack("got it")
            await respond("done")

        retries: list[list[str]] = []

        @app.event("app_mention")
        async def mention(request: Any) -> None:
            retries.append(request.headers.get("x-slack-retry-num", []))

        runner = web.AppRunner(app.web_app(path="/slack/events"), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"
            ok = await fake.send_slash_command_http(
                url, command="/count", text="p", user_id=user, channel_id=channel
            )
            await fake.wait_for(lambda: len(fake.response_url_posts) == 1)
            payload = fake.slash_command_payload(
                command="/count", text="p", user_id=user, channel_id=channel
            )
            body = urlencode(payload).encode()
            forged = dict(fake.signed_headers(body), **{"X-Slack-Signature": "v0=" + "0" * 64})
            stale = fake.signed_headers(body, timestamp=int(time.time()) - 301)
            tampered = fake.signed_headers(body.replace(b"text=p", b"text=q"))
            genuine = fake.signed_headers(body)
            statuses = []
            async with aiohttp.ClientSession() as session:
                for headers in (forged, stale, tampered, genuine):
                    headers["Content-Type"] = "application/x-www-form-urlencoded"
                    async with session.post(url, data=body, headers=headers) as resp:
                        statuses.append(resp.status)
            event = {"type": "app_mention", "user": user, "text": "hi", "channel": channel}
            mentioned = await fake.send_event_http(
                url, event, retry_attempt=2, retry_reason="http_timeout"
            )
            await fake.wait_for(lambda: bool(retries) and len(fake.response_url_posts) == 2)
        finally:
            await runner.cleanup()

    assert (ok.status, ok.body, ok.late) == (200, "got it", False)
    posts = fake.response_url_posts
    assert [(p.body["text"], p.response_type) for p in posts] == [("done", "ephemeral")] * 2
    assert posts[1].url == payload["response_url"]  # the genuine request's own response_url
    assert statuses == [401, 401, 401, 200]
    assert mentioned.status == 200
    assert retries == [["2"]]


async def test_response_url_use_and_age_limits() -> None:
    clock = FakeClock()
    async with FakeSlack(clock=clock.monotonic) as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        first = fake.slash_command_payload(
            command="/count", text="", user_id=user, channel_id=channel
        )
        second = fake.slash_command_payload(
            command="/count", text="", user_id=user, channel_id=channel
        )
        hook = AsyncWebhookClient(first["response_url"])
        statuses = [(await hook.send(text=f"r{i}")).status_code for i in range(6)]
        no_text = await AsyncWebhookClient(second["response_url"]).send_dict({"blocks": []})
        clock.advance(30 * 60 + 1)
        expired = await AsyncWebhookClient(second["response_url"]).send(text="late")

    assert statuses == [200] * 5 + [404]
    assert [p.error for p in fake.response_url_posts] == [None] * 5 + [
        "used_url",
        "no_text",
        "expired_url",
    ]
    assert (no_text.status_code, expired.status_code) == (400, 404)


async def test_wait_for_times_out(fake: FakeSlack) -> None:
    with pytest.raises(TimeoutError):
        await fake.wait_for(lambda: bool(fake.calls), timeout=0.05)
