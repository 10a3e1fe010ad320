"""The Slack adapter against FakeSlack, with the real slack_bolt / slack_sdk clients.

Most tests run the whole bot (``bot.runtime.app.App`` on a SQLite file, the real dispatcher) with
the adapter in Socket Mode. Where deliveries have to wait (pacing, retries after a 429 or a lost
answer), the bot and the fake share one virtual clock: the dispatcher's sleeps advance it, and
``settle`` jumps it to the next retry, so no test waits on the real clock.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from slack_sdk.web.async_client import AsyncWebClient
from sqlalchemy import func, select

from adapters.slack.adapter import SlackAdapter
from adapters.slack.admins import SlackAdmins
from adapters.slack.blocks import (
    MAX_BLOCKS,
    MAX_FIELD,
    MAX_FIELDS,
    MAX_HEADER,
    MAX_TEXT,
    clip,
    escape,
    message_blocks,
    units,
)
from adapters.slack.commands import strip_mention
from adapters.slack.delivery import SLACK_LIMITS
from bot.charts import chart
from bot.commands.inflight import Backlog
from bot.commands.request import Reply, Request
from bot.delivery.adapter import Earlier
from bot.delivery.pacing import Route, Window
from bot.domain.message import ChoiceLine, Message, Notice, Significance, Timed
from bot.domain.model import TallyState
from bot.domain.subscription import ChannelRef, Mode, Platform, Subscription
from bot.errors import ConfigError, MessageGone, PermanentDeliveryError, TransientDeliveryError
from bot.ingest.pipeline import Pipeline
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import Config, ServerConfig, parse
from bot.settings.secrets import Secret
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import subscriptions as sub_rows
from bot.store.schema import outbox as outbox_table
from bot.testing.clock import FakeClock
from tests import charts
from tests.fakes.slack_fake import (
    FakeSlack,
    RecordedSlackMessage,
    RecordedUpload,
    ResponseUrlPost,
)
from tests.fakes.slack_fake.markup import visible
from tests.helpers import T0, bare_context, tally

TITLE = "Amazon BHM1 union election, Bessemer AL"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
HOSTILE = "<!channel> @everyone <@U123>"
Handle = Callable[[Request], Awaitable[Reply]]


class VirtualTime:
    """One clock for the bot and the fake; the bot's sleeps advance it instead of waiting."""

    def __init__(self) -> None:
        self.clock = FakeClock()

    def monotonic(self) -> float:
        return self.clock.monotonic()

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.clock.advance(seconds)
        await asyncio.sleep(0)


def config(
    tmp_path: Path,
    fake: FakeSlack,
    *,
    mode: str = "socket",
    title: str = TITLE,
    yes_label: str = "Yes (RWDSU)",
    alerts: tuple[str, ...] = (),
    slack_users: tuple[str, ...] = (),
) -> Config:
    return parse(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'var' / 'tallybot.sqlite3'}"},
            "admins": {"alerts": [f"slack:{fake.team_id}/{a}" for a in alerts]},
            "slack": {
                "mode": mode,
                "api_base": fake.api_url,
                "port": 0,
                "admin_users": list(slack_users),
                "admin_workspaces": [fake.team_id],
            },
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": title,
                    "rule": "majority",
                    "tie_holder": "no",
                    "eligible": 5876,
                    "received": 3215,
                    "choices": [
                        {"id": "yes", "label": yes_label},
                        {"id": "no", "label": "No union"},
                    ],
                    "source": {"kind": "manual"},
                }
            ],
        },
        tmp_path / "tallybot.toml",
    )


def adapter_for(
    fake: FakeSlack, cfg: Config, handle: Handle, backlog: Backlog | None = None
) -> SlackAdapter:
    """The adapter as its plug-in builds it (its admin policy from ``[slack]``), the tokens
    given, commands going to ``handle`` (``backlog``: the commands under way, its own if
    none)."""
    settings = cfg.settings("slack")
    secrets = {
        "SLACK_BOT_TOKEN": Secret("SLACK_BOT_TOKEN", fake.bot_token),
        "SLACK_APP_TOKEN": Secret("SLACK_APP_TOKEN", fake.app_token),
        "SLACK_SIGNING_SECRET": Secret("SLACK_SIGNING_SECRET", fake.signing_secret),
    }
    context = bare_context(handle=handle, admins=SlackAdmins(settings), secrets=secrets)
    if backlog is not None:
        context = replace(context, backlog=backlog)
    return SlackAdapter(settings, replace(context, ops_server=cfg.server is not None))


@dataclass
class Bot:
    app: App
    adapter: SlackAdapter
    fake: FakeSlack
    vt: VirtualTime | None
    handled: list[str] = field(default_factory=list)

    def ref(self, channel_id: str) -> ChannelRef:
        return ChannelRef(Platform("slack"), self.fake.team_id, channel_id)

    async def slash(self, text: str, *, user: str, channel: str) -> ResponseUrlPost:
        """``/count text`` over Socket Mode; the answer posted to its response_url."""
        fake = self.fake
        delivery = await fake.send_slash_command(
            command="/count", text=text, user_id=user, channel_id=channel
        )
        assert delivery.acked
        assert not delivery.late
        await fake.wait_for(
            lambda: any(p.url == delivery.response_url for p in fake.response_url_posts)
        )
        return next(p for p in fake.response_url_posts if p.url == delivery.response_url)

    async def ingest(
        self, yes: int, no: int, *, state: TallyState = TallyState.COUNTING
    ) -> Message:
        final = state is TallyState.FINAL  # a final accounts for every ballot received
        received = yes + no + 505 if final else 3215
        result = await self.app.pipeline.ingest(  # fewer received at the final: a correction
            tally(yes, no, challenged=505, received=received, state=state, correction=final)
        )
        assert result.message is not None
        return result.message

    async def settle(self) -> None:
        """Deliver everything: drain what is due, then jump the clock to the next retry."""
        for _ in range(100):
            await self.app.idle()
            pending = outbox_table.c.status == str(outbox.DeliveryStatus.PENDING)
            async with self.app.db.connect() as conn:
                left = await conn.scalar(select(func.count()).where(pending))
                if not left:
                    return
                assert self.vt is not None, "a delivery waits for a retry, but time is real"
                now = self.vt.clock.now()
                # The earliest retry; deliveries due now may be held back behind it.
                at = await conn.scalar(
                    select(func.min(outbox_table.c.next_attempt_at)).where(
                        pending, outbox_table.c.next_attempt_at > now
                    )
                )
            assert at is not None, "deliveries are due but the dispatcher sends none"
            self.vt.clock.advance((at - now).total_seconds())
        raise AssertionError("the outbox never emptied")

    async def subscription(self, channel_id: str) -> Subscription:
        async with self.app.db.connect() as conn:
            (sub,) = await sub_rows.for_channel(conn, self.ref(channel_id))
        return sub


@asynccontextmanager
async def running(
    fake: FakeSlack,
    cfg: Config,
    vt: VirtualTime | None = None,
    *,
    env: pytest.MonkeyPatch | None = None,
    before: Callable[[Request], Awaitable[None]] | None = None,
    backlog: Backlog | None = None,
) -> AsyncIterator[Bot]:
    """The whole bot with the Slack adapter; built by bot.runtime.plugins when ``env`` is given
    (tokens from the environment), else directly, with the command handler watched (``handled``)
    and, if given, ``before`` awaited ahead of every command (``backlog``: its adapter's)."""
    handled: list[str] = []
    made: list[SlackAdapter] = []

    def factory(commands: Any) -> SlackAdapter:
        async def handle(request: Request) -> Reply:
            if before is not None:
                await before(request)
            handled.append(request.text)
            reply: Reply = await commands.handle(request)
            return reply

        made.append(adapter_for(fake, cfg, handle, backlog))
        return made[-1]

    factories: dict[Platform, Any] = {Platform("slack"): factory}
    if env is not None:
        env.setenv("SLACK_BOT_TOKEN", fake.bot_token)
        env.setenv("SLACK_APP_TOKEN", fake.app_token)
        factories = dict(adapter_factories(cfg))
    app = App(
        cfg,
        factories,
        clock=vt.clock if vt else None,
        sleep=vt.sleep if vt else asyncio.sleep,
        poll=False,
    )
    async with app:
        adapter = app.adapters[Platform("slack")]
        assert isinstance(adapter, SlackAdapter)
        if cfg.settings("slack").mode == "socket":
            await fake.wait_for(lambda: len(fake.live_socket_connections) == 1)
        yield Bot(app, adapter, fake, vt, handled)


@pytest.fixture
def vt() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
async def fake(vt: VirtualTime) -> AsyncIterator[FakeSlack]:
    async with FakeSlack(clock=vt.monotonic) as f:
        yield f


def bot_posts(fake: FakeSlack, channel: str) -> list[RecordedSlackMessage]:
    return [m for m in fake.messages(channel) if m.source == "chat.postMessage"]


def _delivery_id(message: RecordedSlackMessage) -> int:
    assert message.metadata is not None
    assert message.metadata["event_type"] == "tallybot_delivery"
    key = message.metadata["event_payload"]["key"]
    assert key.startswith("tb")
    return int(key[2:])


def block_texts(blocks: list[dict[str, Any]] | None) -> str:
    return json.dumps(blocks or [], ensure_ascii=False)


# ------------------------------------------------------------------------ commands


async def test_status_command_is_acked_first_then_answered_with_blocks(tmp_path: Path) -> None:
    async with FakeSlack() as fake:  # the real clock: the ack latency is measured for real
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        acked_before_work: list[bool] = []

        async def after_ack(request: Request) -> None:
            # Times out (the test fails) unless the adapter acked before doing the work.
            await fake.wait_for(lambda: fake.deliveries[-1].acked, timeout=4)
            acked_before_work.append(True)

        async with running(fake, config(tmp_path, fake), before=after_ack) as bot:
            await bot.ingest(84, 201)
            post = await bot.slash("status bessemer-2021", user=user, channel=channel)
        delivery = fake.deliveries[-1]

    assert acked_before_work == [True]
    assert delivery.ack_latency_s is not None
    assert delivery.ack_latency_s < 3.0
    assert delivery.ack_payload is None
    assert post.time >= delivery.sent_at + delivery.ack_latency_s
    assert (post.status, post.response_type) == (200, "in_channel")
    assert post.body["text"] == "No union leads by 117"
    blocks = post.body["blocks"]
    assert blocks[0] == {
        "type": "header",
        "text": {"type": "plain_text", "text": TITLE, "emoji": False},
    }
    assert blocks[1]["text"] == {
        "type": "plain_text",
        "text": "No union leads by 117",
        "emoji": False,
    }
    assert "No union — 201 votes · 70.5%" in block_texts(blocks)
    assert blocks[-1]["type"] == "context"
    assert [m.source for m in fake.messages(channel)] == ["response_url"]  # shown in channel


async def test_subscribed_channels_each_get_the_update_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    news, union = fake.add_channel("news"), fake.add_channel("union-hall")
    quiet = fake.add_channel("quiet")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt, env=monkeypatch) as bot:
        for channel in (news, union):
            answer = await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
            assert answer.response_type == "in_channel"
            assert answer.body["text"] == (
                "Subscribed this channel to bessemer-2021: significant events only."
            )
        message = await bot.ingest(84, 201)
        await bot.settle()
        posts = {channel: bot_posts(fake, channel) for channel in (news, union)}
        async with bot.app.db.connect() as conn:
            deliveries = {
                channel: await outbox.get(conn, _delivery_id(posted[0]))
                for channel, posted in posts.items()
            }

    assert message.significant
    for channel in (news, union):
        (posted,) = posts[channel]
        assert posted.text == "First results: No union leads by 117"
        assert posted.blocks is not None
        assert posted.blocks[0]["text"]["text"] == TITLE
        assert "No union — 201 votes" in block_texts(posted.blocks)
        delivery = deliveries[channel]  # the metadata key names the outbox row it delivers
        assert delivery is not None
        assert delivery.channel == bot.ref(channel)
        assert delivery.status is outbox.DeliveryStatus.SENT
        assert delivery.platform_message_id == posted.ts
    assert fake.messages(quiet) == []
    assert len(fake.calls_to("chat.postMessage")) == 2
    assert fake.count_429 == 0


async def test_a_429_burst_loses_and_doubles_nothing(tmp_path: Path, vt: VirtualTime) -> None:
    # The fake allows half what the adapter reports (0.5/s, no burst): 429s are certain.
    async with FakeSlack(clock=vt.monotonic, post_per_channel_per_s=0.5, post_burst=1) as fake:
        channel, user = fake.add_channel("news"), fake.add_user("ada")
        async with running(fake, config(tmp_path, fake), vt) as bot:
            await bot.slash("subscribe bessemer-2021 all", user=user, channel=channel)
            # Every tally changes the lead: six significant updates, none may be coalesced.
            figures = [(10, 5), (10, 20), (30, 20), (30, 40), (50, 40), (50, 60)]
            expected = [(await bot.ingest(y, n)).headline for y, n in figures]
            await bot.settle()
            async with bot.app.db.connect() as conn:
                dead = await outbox.dead(conn)

    posted = bot_posts(fake, channel)
    keys = [m.metadata["event_payload"]["key"] for m in posted if m.metadata]
    limited = [c for c in fake.calls_to("chat.postMessage") if c.status == 429]
    print(f"\n429 burst: {len(limited)} x 429 for {len(posted)} posts")
    assert fake.count_429 == len(limited) > 0
    calls = fake.calls_to("chat.postMessage")
    for i, call in enumerate(calls[:-1]):  # the next try waited for Retry-After
        if call.status == 429:
            assert calls[i + 1].time >= call.time + int(call.headers["Retry-After"])
    assert dead == []
    assert len(keys) == len(set(keys)) == len(expected)  # nothing lost, nothing doubled
    assert [m.text for m in posted] == expected  # in order


@pytest.mark.parametrize("committed", [True, False], ids=["posted-answer-lost", "request-lost"])
async def test_a_post_whose_answer_was_lost_appears_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, committed: bool
) -> None:
    channel, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
        fake.fail_next("chat.postMessage", drop=True, commit=committed)
        await bot.ingest(84, 201)
        await bot.settle()
        async with bot.app.db.connect() as conn:
            sent = await outbox.get(conn, 1)

    assert sent is not None
    (posted,) = bot_posts(fake, channel)
    assert sent.status is outbox.DeliveryStatus.SENT
    assert sent.platform_message_id == posted.ts
    assert sent.attempts == 1
    posts = fake.calls_to("chat.postMessage")
    assert [c.response.get("dropped", False) for c in posts] == (
        [True] if committed else [True, False]
    )
    (history,) = fake.calls_to("conversations.history")
    assert history.args["include_all_metadata"] in (True, "true", "1")


async def test_a_post_cut_off_by_a_crash_is_not_repeated_after_restart(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel = fake.add_channel("news")
    cfg = config(tmp_path, fake)
    # The state a kill -9 leaves: the delivery claimed (SENDING), its post made, not recorded.
    async with Database(cfg.store_url) as db:
        async with db.begin() as conn:
            await count_rows.upsert(conn, cfg.counts[0].count)
            await sub_rows.subscribe(
                conn, ChannelRef(Platform("slack"), fake.team_id, channel), "bessemer-2021",
                Mode.EVENTS, by="t", at=vt.clock.now(),
            )  # fmt: skip
        result = await Pipeline(db, vt.clock).ingest(tally(84, 201, received=3215))
        assert result.message is not None
        async with db.begin() as conn:
            assert await outbox.mark_sending(conn, [1], at=vt.clock.now()) == 1
    async with adapter_for(fake, cfg, _never) as before_crash:
        await before_crash.post(adapter_ref(fake, channel), result.message, key="tb1")

    async with running(fake, cfg, vt) as bot:
        assert await bot.app.dispatcher.recover() <= 1  # (the dispatcher's own run() does too)
        await bot.settle()

    assert len(bot_posts(fake, channel)) == 1
    assert len(fake.calls_to("conversations.history")) == 1


# ------------------------------------------------------------------------ charts


def check_png(upload: RecordedUpload) -> None:
    assert upload.data[:8] == PNG_SIGNATURE
    assert upload.length == upload.declared_length == len(upload.data) < 200_000
    width, height = int.from_bytes(upload.data[16:20]), int.from_bytes(upload.data[20:24])
    assert (width, height) == (1200, 800)


async def test_chart_command_uploads_the_png_into_the_channel(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel, user = fake.add_channel("general"), fake.add_user("ada")
    outside = fake.add_channel("elsewhere", member=False)
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.ingest(84, 201)
        await bot.ingest(90, 230)
        asked = await fake.send_slash_command(
            command="/count", text="chart bessemer-2021", user_id=user, channel_id=channel
        )
        await fake.wait_for(lambda: len(fake.uploads) == 1)
        refused = await bot.slash("chart bessemer-2021", user=user, channel=outside)

    assert asked.acked
    assert not asked.late
    (upload,) = fake.uploads
    print(f"\n/count chart on Slack: {upload.filename}, {upload.length} bytes")
    assert (upload.channel, upload.thread_ts) == (channel, None)
    assert upload.filename == "bessemer-2021-2.png"
    check_png(upload)
    assert upload.title == f"Chart of {TITLE}, as of update #2"
    assert upload.initial_comment is not None
    assert visible(upload.initial_comment) == f"Chart of {TITLE}, as of update #2."
    assert upload.alt_txt is not None
    assert upload.alt_txt.startswith(
        f"Chart of {TITLE}: votes for Yes (RWDSU), No union against ballots counted, "
        "updates #1 to #2. Unofficial: No union leads by 140."
    )
    (shared,) = fake.messages(channel)  # the file, with its comment, is the whole answer
    assert shared.files is not None
    assert [f["id"] for f in shared.files] == [upload.file_id]
    assert not any(p.url == asked.response_url for p in fake.response_url_posts)
    # Where the bot is not a member it cannot upload: a private error that says what to do.
    assert refused.response_type == "ephemeral"
    assert visible(refused.body["text"]).startswith(
        "Error: the chart could not be posted here: the bot is not a member of the channel "
        "(not_in_channel): invite the bot with /invite @tallybot"
    )
    assert refused.body["blocks"][0]["text"]["text"] == visible(refused.body["text"])
    assert fake.messages(outside) == []


@pytest.mark.parametrize("lost", [None, "answer", "request"])
async def test_the_final_tally_uploads_its_chart_into_its_thread_once(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, lost: str | None
) -> None:
    news, union = fake.add_channel("news"), fake.add_channel("union-hall")
    user = fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021", user=user, channel=news)
        await bot.slash("subscribe bessemer-2021 all", user=user, channel=union)
        await bot.ingest(84, 201)
        await bot.settle()
        routine = await bot.ingest(90, 230)
        await bot.settle()
        if lost is not None:  # the upload goes through but its answer is lost, or it is lost
            fake.fail_next("files.completeUploadExternal", drop=True, commit=lost == "answer")
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        async with bot.app.db.connect() as conn:
            dead = await outbox.dead(conn)
            sent = {
                c: await outbox.get(conn, _delivery_id(bot_posts(fake, c)[-1]))
                for c in (news, union)
            }

    assert not routine.significant
    assert dead == []
    for channel in (news, union):
        posts = bot_posts(fake, channel)
        assert posts[-1].text == final.headline
        assert len(posts) == (2 if channel == news else 3)  # union gets the routine one too
        (upload,) = [u for u in fake.uploads if u.channel == channel]
        assert upload.thread_ts == posts[-1].ts  # in the final message's thread
        assert upload.filename == "bessemer-2021-3.png"
        assert upload.title == f"Chart of {TITLE}, as of update #3"
        assert upload.initial_comment is None
        assert upload.alt_txt is not None
        assert "Final tally: No union wins" in upload.alt_txt
        check_png(upload)
        replies = [m for m in fake.messages(channel) if m.thread_ts is not None]
        assert [(m.thread_ts, m.source) for m in replies] == [
            (posts[-1].ts, "files.completeUploadExternal")
        ]
        delivery = sent[channel]
        assert delivery is not None
        assert delivery.status is outbox.DeliveryStatus.SENT
        assert delivery.platform_message_id == posts[-1].ts
    print(f"\nfinal chart on Slack: {upload.length} bytes")
    completes = fake.calls_to("files.completeUploadExternal")
    histories = fake.calls_to("conversations.history")
    if lost is None:
        assert (len(completes), len(histories)) == (2, 0)
    elif lost == "answer":  # the retry found the message and the chart in its thread
        assert (len(completes), len(histories)) == (2, 1)
    else:  # the retry found the message, no chart: uploaded now
        assert (len(completes), len(histories)) == (3, 1)
    assert len(fake.calls_to("chat.postMessage")) == 2 + 3  # news, union: no message twice


@pytest.mark.parametrize("failure", ["render", "missing-scope"])
async def test_the_final_message_goes_even_when_its_chart_cannot(
    tmp_path: Path,
    fake: FakeSlack,
    vt: VirtualTime,
    failure: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    if failure == "render":
        monkeypatch.setattr(chart, "render_chart", charts.broken)
    channel, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021", user=user, channel=channel)
        if failure == "missing-scope":
            fake.fail_next("files.getUploadURLExternal", status=200, error="missing_scope")
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        (posted,) = bot_posts(fake, channel)
        async with bot.app.db.connect() as conn:
            delivery = await outbox.get(conn, _delivery_id(posted))
        subscription = await bot.subscription(channel)

    assert posted.text == final.headline
    assert fake.uploads == []
    assert delivery is not None
    assert delivery.status is outbox.DeliveryStatus.SENT
    assert delivery.attempts == 0
    assert subscription.enabled
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    if failure == "render":
        assert fake.calls_to("files.getUploadURLExternal") == []
        assert "the final message goes without its chart: RuntimeError: no fonts" in (warnings)
    else:
        assert any("went without its chart" in w and "missing_scope" in w for w in warnings)


async def test_admin_commands_need_an_admin_and_refusals_are_audited(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel = fake.add_channel("general")
    bo = fake.add_user("bo")
    ada = fake.add_user("ada", is_admin=True)
    olga = fake.add_user("olga", is_owner=True)
    cy = fake.add_user("cy")  # a configured admin: no users.info needed
    cfg = config(tmp_path, fake, slack_users=(cy,))
    async with running(fake, cfg, vt) as bot:
        refused = await bot.slash("update bessemer-2021 yes=10 no=5", user=bo, channel=channel)
        lookups_after_bo = len(fake.calls_to("users.info"))
        status = await bot.slash("status bessemer-2021", user=bo, channel=channel)
        lookups_after_status = len(fake.calls_to("users.info"))
        accepted = await bot.slash("update bessemer-2021 yes=10 no=5", user=ada, channel=channel)
        again = await bot.slash("update bessemer-2021 yes=12 no=5", user=ada, channel=channel)
        lookups_after_ada = len(fake.calls_to("users.info"))
        owner = await bot.slash("pause bessemer-2021", user=olga, channel=channel)
        configured = await bot.slash("resume bessemer-2021", user=cy, channel=channel)
        async with bot.app.db.connect() as conn:
            audit = list(reversed(await audit_rows.recent(conn)))

    assert refused.response_type == "ephemeral"
    assert refused.body["text"].startswith("Error: only admins can update")
    (block,) = refused.body["blocks"]  # as plain text, shown as it is
    assert block["text"] == {"type": "plain_text", "text": refused.body["text"], "emoji": False}
    assert (lookups_after_bo, lookups_after_status) == (1, 1)  # status needs no admin check
    assert (status.body["text"], status.response_type) == (
        f"{TITLE}: no figures yet.",
        "in_channel",
    )
    assert accepted.response_type == "ephemeral"
    assert accepted.body["text"].startswith("Accepted update #1 for bessemer-2021")
    assert accepted.body["blocks"][0]["text"]["text"].startswith("Accepted update #1")
    assert again.body["text"].startswith("Accepted update #2")
    assert lookups_after_ada == 2  # ada's second command used the cached answer
    assert owner.body["text"].startswith("Accepted update #3")
    assert configured.body["text"].startswith("Accepted update #4")
    # bo, ada, olga, and cy (configured, but maybe an admin of this workspace's counts too)
    assert len(fake.calls_to("users.info")) == 4
    assert [(a.actor, a.action, a.allowed) for a in audit] == [
        (f"slack:{bo} (bo)", "update", False),
        (f"slack:{ada} (ada)", "update", True),
        (f"slack:{ada} (ada)", "update", True),
        (f"slack:{olga} (olga)", "pause", True),
        (f"slack:{cy} (cy)", "resume", True),
    ]
    assert audit[0].detail == "refused: not an admin"


async def test_a_retried_mention_is_answered_once(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        async with running(fake, config(tmp_path, fake)) as bot:
            await bot.ingest(84, 201)
            event = {
                "type": "app_mention",
                "user": user,
                "channel": channel,
                "text": f"<@{fake.bot_user_id}> status bessemer-2021",
            }
            first = await fake.send_event(event, event_id="Ev0001")
            retry = await fake.send_event(
                event, event_id="Ev0001", retry_attempt=1, retry_reason="timeout"
            )
            other = await fake.send_event(
                {**event, "text": f"<@{fake.bot_user_id}> frobnicate"}, event_id="Ev0002"
            )
            await fake.wait_for(lambda: len(fake.messages(channel)) == 1 and fake.ephemerals)

    assert (first.acked, retry.acked, other.acked) == (True, True, True)
    assert bot.handled == ["status bessemer-2021", "frobnicate"]
    (reply,) = fake.messages(channel)
    assert reply.text == "No union leads by 117"
    assert reply.thread_ts == first.envelope["payload"]["event"]["ts"]
    assert reply.blocks is not None
    assert reply.blocks[0]["type"] == "header"
    (error,) = fake.ephemerals
    assert (error.user, error.channel) == (user, channel)
    assert error.text.startswith("Error: unknown command 'frobnicate'")


async def test_a_chart_asked_by_mention_is_uploaded_into_its_thread(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel, user = fake.add_channel("general"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.ingest(84, 201)
        event = {
            "type": "app_mention",
            "user": user,
            "channel": channel,
            "text": f"<@{fake.bot_user_id}> chart bessemer-2021",
        }
        asked = await fake.send_event(event, event_id="Ev0001")
        await fake.wait_for(lambda: len(fake.uploads) == 1)

    (upload,) = fake.uploads
    assert (upload.channel, upload.filename) == (channel, "bessemer-2021-1.png")
    assert upload.thread_ts == asked.envelope["payload"]["event"]["ts"]
    assert upload.initial_comment == f"Chart of {TITLE}, as of update #1."
    check_png(upload)
    assert bot_posts(fake, channel) == []  # the file is the answer
    assert fake.ephemerals == []


def test_strip_mention() -> None:
    assert strip_mention("<@UBOT> status x", "UBOT") == "status x"
    assert strip_mention("hey <@UBOT|tallybot>  list ", "UBOT") == "list"
    assert strip_mention("<@UOTHER> <@UBOT> help", "UBOT") == "help"
    assert strip_mention("status x", "UBOT") == "status x"


async def test_http_mode_verifies_signatures_and_answers(tmp_path: Path) -> None:
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        other = fake.add_channel("random")
        async with running(fake, config(tmp_path, fake, mode="http")) as bot:
            url = f"http://127.0.0.1:{bot.adapter.http_port}/slack/events"
            await bot.ingest(84, 201)
            ok = await fake.send_slash_command_http(
                url, command="/count", text="status bessemer-2021", user_id=user, channel_id=channel
            )
            await fake.wait_for(lambda: len(fake.response_url_posts) == 1)
            payload = fake.slash_command_payload(
                command="/count", text="list", user_id=user, channel_id=channel
            )
            body = urlencode(payload).encode()
            forged = {**fake.signed_headers(body), "X-Slack-Signature": "v0=" + "0" * 64}
            stale = fake.signed_headers(body, timestamp=int(time.time()) - 301)
            statuses = []
            async with aiohttp.ClientSession() as session:
                for headers in (forged, stale):
                    headers["Content-Type"] = "application/x-www-form-urlencoded"
                    async with session.post(url, data=body, headers=headers) as resp:
                        statuses.append(resp.status)
            event = {
                "type": "app_mention",
                "user": user,
                "channel": other,  # "general" had its public answer a moment ago
                "text": f"<@{fake.bot_user_id}> status bessemer-2021",
            }
            mention = await fake.send_event_http(url, event, event_id="Ev0042")
            again = await fake.send_event_http(
                url, event, event_id="Ev0042", retry_attempt=1, retry_reason="http_timeout"
            )
            await fake.wait_for(lambda: len(fake.messages(other)) == 1)

    assert (ok.status, ok.body, ok.late) == (200, "", False)
    assert statuses == [401, 401]
    (answer,) = fake.response_url_posts
    assert (answer.response_type, answer.body["text"]) == ("in_channel", "No union leads by 117")
    assert (mention.status, again.status) == (200, 200)
    assert bot.handled == ["status bessemer-2021", "status bessemer-2021"]  # command + mention
    assert [m.source for m in fake.messages(channel)] == ["response_url"]
    assert [m.source for m in fake.messages(other)] == ["chat.postMessage"]
    assert not fake.live_socket_connections
    assert not fake.calls_to("apps.connections.open")


async def test_live_scoreboard_is_edited_and_reposted_when_deleted(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel, user = fake.add_channel("news"), fake.add_user("ada")
    async with running(fake, config(tmp_path, fake), vt) as bot:
        await bot.slash("subscribe bessemer-2021 live", user=user, channel=channel)
        first = await bot.ingest(84, 201)
        await bot.settle()
        board = (await bot.subscription(channel)).live_message_id
        routine = await bot.ingest(97, 245)
        await bot.settle()
        client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
        assert board is not None
        await client.chat_delete(channel=channel, ts=board)
        later = await bot.ingest(120, 300)
        await bot.settle()
        new_board = (await bot.subscription(channel)).live_message_id

    assert first.significant
    assert not routine.significant
    assert not later.significant
    old, event, replacement = bot_posts(fake, channel)
    assert (old.ts, old.deleted, old.edit_count) == (board, True, 1)
    assert old.revisions[0].text == first.headline  # the scoreboard as first posted
    assert old.text == routine.headline  # ... then edited in place
    assert routine.choices[0].votes_text in block_texts(old.blocks)
    assert (event.text, event.deleted, event.edited) == (first.headline, False, False)
    assert (replacement.ts, replacement.text, replacement.deleted) == (
        new_board,
        later.headline,
        False,
    )
    assert [c.error for c in fake.calls_to("chat.update")] == [None, "message_not_found"]


async def test_a_channel_without_the_bot_is_disabled_and_admins_told_to_invite_it(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    news = fake.add_channel("news", member=False)
    admins = fake.add_channel("tallybot-admins")
    user = fake.add_user("ada")
    cfg = config(tmp_path, fake, alerts=(admins,))
    async with running(fake, cfg, vt, env=monkeypatch) as bot:
        subscribed = await bot.slash("subscribe bessemer-2021", user=user, channel=news)
        await bot.ingest(84, 201)
        await bot.settle()
        sub = await bot.subscription(news)
        listed = await bot.slash("list", user=user, channel=news)

    assert subscribed.body["text"].startswith("Subscribed this channel")
    assert not sub.enabled
    assert sub.disabled_reason is not None
    assert "not_in_channel" in sub.disabled_reason
    assert bot_posts(fake, news) == []
    (alert,) = bot_posts(fake, admins)
    assert "invite the bot with /invite @tallybot" in alert.text
    assert f"slack:{fake.team_id}/{news}" in alert.text
    assert alert.blocks is not None
    assert "/invite @tallybot" in block_texts(alert.blocks)
    assert listed.response_type == "ephemeral"
    assert "subscription disabled" in listed.body["text"]


async def test_nothing_from_sources_or_users_can_mention_anyone(
    tmp_path: Path, fake: FakeSlack, vt: VirtualTime
) -> None:
    channel, admins = fake.add_channel("news"), fake.add_channel("admins")
    user = fake.add_user("ada", is_admin=True)
    cfg = config(
        tmp_path,
        fake,
        title=HOSTILE,
        yes_label="Yes <!here> & <https://x.example|x>",
        alerts=(admins,),
    )
    async with running(fake, cfg, vt) as bot:
        await bot.slash("subscribe bessemer-2021 live", user=user, channel=channel)
        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(97, 245)  # the scoreboard is edited
        await bot.slash("status bessemer-2021", user=user, channel=channel)
        await bot.slash("status <!channel>", user=user, channel=channel)
        await bot.slash("update bessemer-2021 yes=1 no=1", user=user, channel=channel)  # rejected
        await fake.send_event(
            {
                "type": "app_mention",
                "user": user,
                "channel": channel,
                "text": f"<@{fake.bot_user_id}> status <@U123>",
            },
        )
        await bot.settle()
        await fake.wait_for(lambda: len(fake.ephemerals) == 1)

    sent = [json.dumps(c.args, ensure_ascii=False) for c in fake.calls]
    sent += [json.dumps(p.body, ensure_ascii=False) for p in fake.response_url_posts]
    everything = "\n".join(sent)
    assert "&lt;!channel&gt; @everyone &lt;@U123&gt;" in everything  # the title, escaped
    assert "&lt;!here&gt; &amp; &lt;https://x.example|x&gt;" in everything
    for needle in ("<!channel>", "<!here>", "<@u123>", "<https://"):
        assert needle not in everything.lower()  # (command words are lower-cased)
    assert "unknown count '&lt;@u123&gt;'" in everything  # the mention's error, escaped
    assert len(bot_posts(fake, channel)) == 2  # the scoreboard and "first results"
    assert len(fake.calls_to("chat.update")) == 1
    (alert,) = bot_posts(fake, admins)
    assert alert.text.startswith("tallybot: Rejected a tally for bessemer-2021 from admin ada")


# ------------------------------------------------------------------- error mapping


Setup = Callable[[FakeSlack, str], None]


def failing(status: int = 200, error: str | None = None, *, drop: bool = False) -> Setup:
    return lambda f, c: f.fail_next("chat.postMessage", status=status, error=error, drop=drop)


FAILURES: list[tuple[str, Setup, type[Exception], str]] = [
    ("429", failing(429), TransientDeliveryError, "rate limited"),
    ("503", failing(503), TransientDeliveryError, "service_unavailable"),
    ("500", failing(500), TransientDeliveryError, "internal_error"),
    ("dropped", failing(500, drop=True), TransientDeliveryError, "no answer"),
    ("deleted", lambda f, c: f.delete_channel(c), PermanentDeliveryError, "channel_not_found"),
    ("archived", lambda f, c: f.archive_channel(c), PermanentDeliveryError, "archived"),
    ("kicked", lambda f, c: f.kick_bot(c), PermanentDeliveryError, "/invite @tallybot"),
    ("auth", failing(error="invalid_auth"), PermanentDeliveryError, "SLACK_BOT_TOKEN"),
    ("blocks", failing(error="invalid_blocks"), PermanentDeliveryError, "invalid_blocks"),
    ("too-long", failing(error="msg_too_long"), PermanentDeliveryError, "msg_too_long"),
]


@pytest.mark.parametrize(
    ("setup", "kind", "words"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES]
)
async def test_post_errors_are_classified(
    fake: FakeSlack,
    setup: Setup,
    kind: type[Exception],
    words: str,
) -> None:
    channel = fake.add_channel("news")
    cfg = config(Path("/nonexistent"), fake)
    async with adapter_for(fake, cfg, _never) as adapter:
        setup(fake, channel)
        with pytest.raises(kind) as info:
            await adapter.post(adapter_ref(fake, channel), Notice("hello"), key="tb1")
    assert words in str(info.value)
    assert isinstance(info.value.__cause__, Exception)  # raised from the slack_sdk error
    if words == "rate limited":
        assert isinstance(info.value, TransientDeliveryError)
        assert info.value.retry_after == 1.0


@pytest.mark.parametrize(
    "error", ["message_not_found", "cant_update_message", "edit_window_closed"]
)
async def test_edit_of_a_gone_message_is_message_gone(fake: FakeSlack, error: str) -> None:
    channel = fake.add_channel("news")
    async with adapter_for(fake, config(Path("/nonexistent"), fake), _never) as adapter:
        ref = adapter_ref(fake, channel)
        ts = await adapter.post(ref, Notice("board"), key="tb1")
        await adapter.edit(ref, ts, Notice("board, edited"))
        fake.fail_next("chat.update", status=200, error=error)
        with pytest.raises(MessageGone, match=error):
            await adapter.edit(ref, ts, Notice("again"))
    assert fake.messages(channel)[0].text == "tallybot: board, edited"


async def test_find_posted_finds_only_our_own_copies_in_one_read(fake: FakeSlack) -> None:
    channel, user = fake.add_channel("news"), fake.add_user("ada")
    async with adapter_for(fake, config(Path("/nonexistent"), fake), _never) as adapter:
        ref = adapter_ref(fake, channel)
        ts = await adapter.post(ref, Notice("one"), key="tb7")
        ts9 = await adapter.post(ref, Notice("three"), key="tb9")
        fake.post_user_message(channel, user, "chatter")
        found = await adapter.find_posted(ref, ["tb7", "tb8", "tb9"], since=T0)
        again = await adapter.post(ref, Notice("one"), key="tb7", earlier=found["tb7"])
        other = await adapter.post(ref, Notice("two"), key="tb8", earlier=found.get("tb8"))
    assert found == {"tb7": Earlier(ts), "tb9": Earlier(ts9)}
    assert again == ts
    assert other != ts
    assert len(fake.calls_to("conversations.history")) == 1
    texts = [m.text for m in fake.messages(channel)]
    assert texts == ["tallybot: one", "tallybot: three", "chatter", "tallybot: two"]


async def _never(request: Request) -> Reply:
    raise AssertionError("no command expected")


def adapter_ref(fake: FakeSlack, channel: str) -> ChannelRef:
    return ChannelRef(Platform("slack"), fake.team_id, channel)


def test_limits_and_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def windows(method: str) -> list[tuple[str, Window, bool]]:
        return [(b.name, b.window, b.per_channel) for b in SLACK_LIMITS.buckets(Route(method))]

    assert windows("chat.postMessage") == [
        ("chat.postMessage per channel", Window(1, 1.0), True),
        ("chat.postMessage", Window(5, 1.0), False),
    ]
    assert windows("chat.update") == [("chat.update", Window(50, 60.0), False)]
    assert windows("conversations.history") == [("conversations.history", Window(50, 60.0), False)]
    for method in ("files.getUploadURLExternal", "files.completeUploadExternal"):
        assert windows(method) == [(method, Window(100, 60.0), False)]

    class Ws:
        team_id = "T1"
        api_url = "http://127.0.0.1:9/api/"

    socket_cfg = config(tmp_path, Ws())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="SLACK_BOT_TOKEN"):
        adapter_factories(socket_cfg)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-1-registry-test")
    with pytest.raises(ConfigError, match="SLACK_APP_TOKEN"):
        adapter_factories(socket_cfg)
    http_cfg = config(tmp_path, Ws(), mode="http")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="SLACK_SIGNING_SECRET"):
        adapter_factories(http_cfg)
    monkeypatch.setenv("SLACK_SIGNING_SECRET_FILE", str(tmp_path / "secret"))
    (tmp_path / "secret").write_text("s3cret-signing-secret\n")
    assert set(adapter_factories(http_cfg)) == {Platform("slack")}


# ----------------------------------------------------------------- Block Kit limits


def absurd(n: int, *, title_len: int = 5000) -> Message:
    choices = tuple(
        ChoiceLine(
            choice_id=f"c{i}",
            label=f"Choice {i} " + "<@U123>&" * 300,
            votes=i,
            votes_text=f"{i:,}",
            share_text="1.0%",
            share=0.01,
            bar="█░░░░░░░░░",
            note="needs " + "a lot & more " * 200,
            leading=i == 0,
            winner=False,
            position=i,
        )
        for i in range(n)
    )
    return Message(
        count_id="absurd",
        title="<!channel> " + "T" * title_len,
        seq=1,
        headline="H&" * 4000,
        choices=choices,
        lines=tuple("line <b> & " * 100 for _ in range(20)),
        footer=Timed.of("footer " * 1000),
        significance=Significance.SIGNIFICANT,
        events=("first_results",),
        leader="c0",
        winner=None,
        final=False,
    )


def check_limits(blocks: list[Any]) -> None:
    assert 0 < len(blocks) <= MAX_BLOCKS
    for b in blocks:
        if b["type"] == "header":
            assert units(b["text"]["text"]) <= MAX_HEADER
        elif b["type"] == "section":
            if "text" in b:
                assert 0 < units(b["text"]["text"]) <= MAX_TEXT
            for f in b.get("fields", []):
                assert 0 < units(f["text"]) <= MAX_FIELD
            assert len(b.get("fields", [])) <= MAX_FIELDS
        else:
            assert b["type"] == "context"
            assert 0 < len(b["elements"]) <= 10
            assert all(units(e["text"]) <= MAX_TEXT for e in b["elements"])
    text = json.dumps(blocks, ensure_ascii=False)
    assert "<@U123>" not in text
    assert "<!channel>" not in text
    assert "<b>" not in text


@pytest.mark.parametrize("n", [2, 44, 60, 700])
async def test_absurd_counts_stay_within_block_kit_limits(fake: FakeSlack, n: int) -> None:
    message = absurd(n)
    blocks = [dict(b) for b in message_blocks(message)]
    check_limits(blocks)
    assert blocks[0]["text"]["text"].endswith("…")
    assert len(blocks[0]["text"]["text"]) == 150
    shown = block_texts(blocks)
    assert "Choice 0 " in shown
    if n > 450:
        assert f"…and {n - 450} more choices not shown" in shown
    else:
        assert f"Choice {n - 1} " in shown
    channel = fake.add_channel("news")
    async with adapter_for(fake, config(Path("/nonexistent"), fake), _never) as adapter:
        ts = await adapter.post(adapter_ref(fake, channel), message, key="tb1")  # fake validates
    assert fake.messages(channel)[0].ts == ts


def test_clip_never_splits_an_entity_and_counts_utf16() -> None:
    assert clip(escape("a&b"), 3) == "a…"
    assert clip("abc", 3) == "abc"
    assert clip("😀" * 10, 5) == "😀😀…"
    for limit in range(1, 30):
        out = clip(escape("<@U123> & <!here>"), limit)
        assert units(out) <= limit
        assert "<" not in out
        tail = out[out.rfind("&") :] if "&" in out else ""
        assert not tail or ";" in tail


async def test_http_mode_mounts_on_the_ops_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        cfg = config(tmp_path, fake, mode="http")
        cfg = replace(cfg, server=ServerConfig(host="127.0.0.1", port=0))
        monkeypatch.setenv("SLACK_SIGNING_SECRET", fake.signing_secret)
        async with running(fake, cfg, env=monkeypatch) as bot:
            assert bot.adapter.serve_http is False  # the ops server carries the endpoint
            assert bot.app.server is not None
            url = f"{bot.app.server.url}/slack/events"
            await bot.ingest(84, 201)
            ok = await fake.send_slash_command_http(
                url, command="/count", text="status bessemer-2021", user_id=user, channel_id=channel
            )
            await fake.wait_for(lambda: len(fake.response_url_posts) == 1)
            async with (
                aiohttp.ClientSession() as session,
                session.get(f"{bot.app.server.url}/healthz") as health,
            ):
                assert health.status == 200
    assert ok.status == 200
    (answer,) = fake.response_url_posts
    assert answer.body["text"] == "No union leads by 117"


async def test_http_mode_carries_out_a_replayed_signed_request_once(tmp_path: Path) -> None:
    """A captured signed request sent again inside its five minutes (the signature still
    verifies), or one request re-signed (its own id, trigger_id, again): answered once."""
    async with FakeSlack() as fake:
        channel, user = fake.add_channel("general"), fake.add_user("ada")
        async with running(fake, config(tmp_path, fake, mode="http")) as bot:
            url = f"http://127.0.0.1:{bot.adapter.http_port}/slack/events"
            payload = fake.slash_command_payload(
                command="/count", text="list", user_id=user, channel_id=channel
            )
            body = urlencode(payload).encode()
            captured = {
                **fake.signed_headers(body),
                "Content-Type": "application/x-www-form-urlencoded",
            }
            resigned = {
                **fake.signed_headers(body, timestamp=int(time.time()) - 1),
                "Content-Type": "application/x-www-form-urlencoded",
                "X-Slack-Retry-Num": "1",
            }
            statuses = []
            async with aiohttp.ClientSession() as session:
                for headers in (captured, captured, captured, resigned):
                    async with session.post(url, data=body, headers=headers) as resp:
                        statuses.append(resp.status)
            other = await fake.send_slash_command_http(
                url, command="/count", text="status", user_id=user, channel_id=channel
            )
            await fake.wait_for(lambda: len(bot.handled) >= 2)
            await bot.settle()
    assert statuses == [200, 200, 200, 200]
    assert other.status == 200
    assert bot.handled == ["list", "status"]
