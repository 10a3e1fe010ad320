"""The Discord adapter against FakeDiscord, with the real discord.py client and command tree.

Most tests run the whole bot: ``bot.runtime.app.App`` on a SQLite file, the real dispatcher, and the
adapter logged in to the fake over REST and the gateway on loopback (``api_base`` and
``gateway_url`` come from the configuration, as they would for a proxy). The bot and the fake
share virtual time: the dispatcher's sleeps advance both clocks, and ``settle`` jumps them to
the next retry, so no test waits for a retry on the real clock. discord.py retries nothing by
itself (``adapters.discord.retries``): every 429 and server error reaches the bot.
"""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import func, select

from adapters.discord.adapter import MAX_RATELIMIT_TIMEOUT, DiscordAdapter, DiscordStartError
from adapters.discord.admins import DiscordAdmins
from adapters.discord.delivery import DISCORD_LIMITS, NONCE_TRUST_S, nonce_for
from adapters.discord.embeds import (
    MAX_FIELD_VALUE,
    MAX_TITLE,
    PALETTE,
    embed_problems,
    escape,
    fit,
    message_embed,
)
from adapters.discord.settings import DiscordSettings
from bot.commands.request import Reply, Request
from bot.commands.throttle import PUBLIC_PER_CHANNEL
from bot.delivery.pacing import Route, Window
from bot.domain.limits import MAX_CHOICES, MAX_LABEL
from bot.domain.message import ChoiceLine, Message, Notice, Significance, Timed
from bot.domain.model import Tally, TallyState
from bot.domain.subscription import ChannelRef, Platform, Subscription
from bot.errors import (
    ConfigError,
    MessageGone,
    PermanentDeliveryError,
    RateLimited,
    TransientDeliveryError,
)
from bot.runtime import plugins
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.settings.loader import Config
from bot.settings.loader import parse as parse_config
from bot.settings.secrets import Secret
from bot.store import audit as audit_rows
from bot.store import outbox
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import Delivery, DeliveryStatus
from bot.store.schema import outbox as outbox_table
from bot.testing.clock import FakeClock
from tests.adapters.discord_time import PATCHED, virtual_waits
from tests.fakes.discord_fake import FakeDiscord, FakeInteraction, RecordedMessage
from tests.fakes.discord_fake.markdown import visible
from tests.fakes.loopback.limits import real_time_and
from tests.helpers import T0, bare_context, stand_in_commands, tally

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http

TOKEN = "discord-test-token"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TITLE = "Amazon BHM1 union election, Bessemer AL"
ALICE = 111_111_111_111_111_111  # a member who may manage channels (and subscribe them)
BOSS = 222_222_222_222_222_222  # has Manage Server
CAROL = 333_333_333_333_333_333  # has the configured admin role
DAVE = 444_444_444_444_444_444  # a configured admin user
MANAGE_CHANNELS = 1 << 4
MANAGE_GUILD = 1 << 5
MENTION_EVERYONE = 1 << 17
Handle = Callable[[Request], Awaitable[Reply]]
DEFAULT_BASE = discord.http.Route.BASE
DEFAULT_GATEWAY = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY


class VirtualTime:
    """One time for the bot and the fake; the bot's sleeps advance it instead of waiting."""

    def __init__(self) -> None:
        self.bot = FakeClock()
        self.fake = real_time_and(self.bot)  # the fake's: the real clock plus the bot's advances

    def advance(self, seconds: float) -> None:
        self.bot.advance(seconds)

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.advance(seconds)
        await asyncio.sleep(0)


@dataclass
class World:
    fake: FakeDiscord
    vt: VirtualTime
    guild: int
    results: int
    union: int
    news: int
    admin: int
    admin_role: int

    def ref(self, channel: int) -> ChannelRef:
        return ChannelRef(Platform("discord"), str(self.guild), str(channel))


@pytest.fixture
def vt() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
async def world(vt: VirtualTime, request: pytest.FixtureRequest) -> AsyncIterator[World]:
    options: dict[str, Any] = getattr(request, "param", {})
    # discord.py's own rate-limit waits move the virtual time too (tests.adapters.discord_time)
    with virtual_waits(vt.fake, vt.sleep):
        async with FakeDiscord(token=TOKEN, clock=vt.fake, **options) as fake:
            guild = fake.add_guild("Bessemer Watch")
            names = ("results", "union-hall", "news", "admin")
            channels = [fake.add_channel(guild, n) for n in names]
            role = fake.add_role(guild, "count-admins")
            fake.add_member(guild, ALICE, "alice", permissions=MANAGE_CHANNELS)
            fake.add_member(guild, BOSS, "boss", permissions=MANAGE_GUILD)
            fake.add_member(guild, CAROL, "carol", roles=[role])
            fake.add_member(guild, DAVE, "dave")
            yield World(fake, vt, guild, *channels, role)
    # discord.py's endpoints and clock are back to Discord's own and the real ones; nothing of
    # the client is left running.
    assert all(module.asyncio is asyncio for module in PATCHED)
    assert discord.http.Route.BASE == DEFAULT_BASE
    assert discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY == DEFAULT_GATEWAY
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []


def count_table(
    count_id: str = "bessemer-2021",
    title: str = TITLE,
    choices: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    choices = choices or [("yes", "Yes (RWDSU)"), ("no", "No union")]
    table: dict[str, Any] = {
        "id": count_id,
        "title": title,
        "rule": "majority",
        "eligible": 5876,
        "received": 3215,
        "choices": [{"id": i, "label": label} for i, label in choices],
        "source": {"kind": "manual"},
    }
    if len(choices) == 2:
        table["tie_holder"] = choices[-1][0]
    return table


def config(tmp_path: Path, world: World, *counts: dict[str, Any]) -> Config:
    fake = world.fake
    return parse_config(
        {
            "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
            "admins": {"alerts": [f"discord:{world.guild}/{world.admin}"]},
            "discord": {
                "api_base": fake.base_url,
                "gateway_url": fake.gateway_url,
                "guilds": [world.guild],
                "admin_roles": ["count-admins"],
                "admin_users": [str(DAVE)],
                "admin_guilds": [str(world.guild)],
            },
            "counts": list(counts)
            or [
                count_table(),
                count_table(
                    "staten-island-2022",
                    "Amazon JFK8 union election, Staten Island NY",
                    [("yes", "Yes (ALU)"), ("no", "No union")],
                ),
            ],
        },
        tmp_path / "tallybot.toml",
    )


def adapter_for(
    world: World,
    cfg: Config,
    commands: Any,
    handle: Any = None,
    *,
    kind: type[DiscordAdapter] = DiscordAdapter,
) -> DiscordAdapter:
    """The adapter as its plug-in builds it (its admin policy from ``[discord]``), the token
    given; ``handle``: instead of ``commands.handle``; ``kind``: a test's subclass."""
    secrets = {"DISCORD_TOKEN": Secret("DISCORD_TOKEN", TOKEN)}
    context = plugins.context(cfg, Platform("discord"), commands, secrets)
    if handle is not None:
        context = replace(context, handle=handle)
    return kind(
        cfg.settings("discord"),
        context,
        client_options={"guild_ready_timeout": 0.05},
        ready_timeout=10,
    )


def answered(ix: FakeInteraction) -> bool:
    """The interaction got its final answer (an immediate one, or a follow-up)."""
    if any(c.status >= 300 for c in ix.callbacks):
        return True
    response = ix.response
    if response is None:
        return False
    return response.type in (4, 8) or bool(ix.followups)


def answer(ix: FakeInteraction) -> RecordedMessage:
    message = ix.followups[-1] if ix.followups else ix.original
    assert message is not None
    return message


@dataclass
class Bot:
    app: App
    adapter: DiscordAdapter
    world: World
    requests: list[Request] = field(default_factory=list)
    handlers: list[Handle] = field(default_factory=list)
    """The adapter's commands go to the last of these: the core's handler, unless a test
    appended one that wraps it."""

    @property
    def fake(self) -> FakeDiscord:
        return self.world.fake

    async def slash(
        self, user: int, sub: str, options: list[dict[str, Any]] | None = None, *, channel: int
    ) -> FakeInteraction:
        """``/count sub ...`` typed by ``user`` in ``channel``; returns once it is answered."""
        ix = await self.fake.inject_slash_command(
            self.world.guild, channel, user, "count", options or [], subcommand=sub
        )
        await self.fake.wait_for(lambda: answered(ix))
        return ix

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
        """Deliver everything: drain what is due, then jump time to the next retry."""
        pending = outbox_table.c.status == DeliveryStatus.PENDING.value
        for _ in range(100):
            await self.app.idle()
            async with self.app.db.connect() as conn:
                left = await conn.scalar(select(func.count()).where(pending))
                if not left:
                    return
                now = self.world.vt.bot.now()
                at = await conn.scalar(
                    select(func.min(outbox_table.c.next_attempt_at)).where(
                        pending, outbox_table.c.next_attempt_at > now
                    )
                )
            assert at is not None, "deliveries are due but the dispatcher sends none"
            self.world.vt.advance((at - now).total_seconds())
        raise AssertionError("the outbox never emptied")

    async def deliveries(self) -> list[Delivery]:
        async with self.app.db.connect() as conn:
            ids = (await conn.scalars(select(outbox_table.c.id).order_by("id"))).all()
            found = [await outbox.get(conn, i) for i in ids]
        return [d for d in found if d is not None]

    async def subscription(self, channel: int) -> Subscription:
        async with self.app.db.connect() as conn:
            (sub,) = await sub_rows.for_channel(conn, self.world.ref(channel))
        return sub


@asynccontextmanager
async def running(
    world: World, cfg: Config, *, kind: type[DiscordAdapter] = DiscordAdapter
) -> AsyncIterator[Bot]:
    made: list[DiscordAdapter] = []
    seen: list[Request] = []
    handlers: list[Handle] = []

    def factory(commands: Any) -> DiscordAdapter:
        handlers.append(commands.handle)

        async def recording(request: Request) -> Reply:
            seen.append(request)
            return await handlers[-1](request)

        made.append(adapter_for(world, cfg, commands, handle=recording, kind=kind))
        return made[-1]

    vt = world.vt
    app = App(cfg, {Platform("discord"): factory}, clock=vt.bot, sleep=vt.sleep, poll=False)
    async with app:
        yield Bot(app, made[0], world, seen, handlers)


def bot_posts(fake: FakeDiscord, channel: int) -> list[RecordedMessage]:
    """Messages the bot posted itself (not answers to commands), oldest first."""
    return [
        m
        for m in fake.messages(channel)
        if m.interaction_id is None and m.author_id == fake.bot_user_id
    ]


def post_requests(fake: FakeDiscord, channel: int) -> list[Any]:
    path = f"/channels/{channel}/messages"
    return [r for r in fake.requests if r.method == "POST" and r.path == path]


def opts(**values: Any) -> list[dict[str, Any]]:
    return [{"name": k, "value": v} for k, v in values.items()]


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's header (IHDR comes first)."""
    assert data[:8] == PNG_SIGNATURE
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


# ------------------------------------------------------------------------ commands


async def test_status_is_deferred_at_once_then_answered_with_the_embed(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await bot.ingest(84, 201)
        handle = bot.handlers[-1]
        acked_first: list[bool] = []

        async def after_ack(request: Request) -> Reply:
            # Deadlocks (and fails on the timeout) unless the adapter deferred before working.
            await fake.wait_for(lambda: bool(fake.interactions[-1].callbacks), timeout=4)
            acked_first.append(True)
            return await handle(request)

        bot.handlers.append(after_ack)
        ix = await bot.slash(ALICE, "status", opts(count="bessemer-2021"), channel=world.results)
        bot.handlers.pop()
        world.vt.advance(PUBLIC_PER_CHANNEL.seconds)  # the channel may have a public reply again
        bare = await bot.slash(ALICE, "status", channel=world.results)  # no count: ambiguous
        helped = await bot.slash(ALICE, "help", channel=world.results)  # no store: at once
        registered = fake.registered_commands[world.guild]

    assert acked_first == [True]
    (callback,) = ix.callbacks
    assert (callback.type, callback.flags) == (5, 0)  # a public deferral
    assert callback.status < 300
    assert callback.time - ix.injected_at < 3.0
    shown = answer(ix)
    assert shown is ix.original
    assert not shown.ephemeral
    assert shown.allowed_mentions == {"parse": []}
    assert shown.content == ""
    (embed,) = shown.embeds
    assert embed["title"] == TITLE
    assert embed["description"].startswith(
        "**No union leads by 117**\nNo union leads by 117 votes (41.1 points)."
    )
    assert [f["name"] for f in embed["fields"]] == ["Yes (RWDSU)", "▶ No union"]
    assert embed["fields"][1]["value"].startswith("**201** votes · 70.5%\n`")
    assert embed["footer"]["text"].startswith("Unofficial results · source: nlrb-stream")
    assert embed["color"] == PALETTE[1].value  # "No union" (position 1) leads
    assert fake.messages(world.results, include_deleted=False) == [shown]  # and nothing else

    # Without a count, with two counts configured and no subscription: a private summary,
    # one line per count.
    assert bare.callbacks[0].type == 5
    error = answer(bare)
    assert error.ephemeral
    lines = visible(error.content).split("\n")
    assert lines[0].startswith("bessemer-2021 [counting]: No union leads by 117")
    assert lines[-1] == "For one count's figures: usage: status [count]"
    assert len(lines) == 3
    assert bare.original is not None
    assert bare.original.deleted  # the public "thinking…" placeholder was taken back

    (immediate,) = helped.callbacks
    assert (immediate.type, immediate.flags) == (4, 64)  # answered at once, privately
    assert visible(answer(helped).content).startswith(
        "Commands:\n  subscribe <count> [events|all|live]"
    )

    request = bot.requests[0]
    assert request.text == "status bessemer-2021"
    assert request.channel == world.ref(world.results)
    assert (request.user_id, request.user_name) == (str(ALICE), "alice")
    assert not request.admin

    (count,) = registered
    assert count["name"] == "count"
    subs = {o["name"]: o for o in count["options"]}
    assert set(subs) == {
        "subscribe", "unsubscribe", "list", "status", "history", "chart", "help",
        "update", "correct", "pause", "resume", "final", "deliveries",
        "create", "edit", "archive", "delete", "admins", "apikey", "alerts", "rehearse",
        "follow", "unfollow", "following", "schedule",
    }  # fmt: skip
    update = [(o["name"], o["type"], o.get("required", False)) for o in subs["update"]["options"]]
    assert update == [
        ("count", 3, True),
        ("figures", 3, False),
        ("void", 4, False),
        ("challenged", 4, False),
        ("received", 4, False),
    ]
    assert subs["update"]["options"][2]["min_value"] == 0
    assert subs["subscribe"]["options"][0]["autocomplete"] is True
    # a new count's name is not one of the counts there are (issue 28 part 5)
    assert subs["create"]["options"][0]["name"] == "count"
    assert not subs["create"]["options"][0].get("autocomplete", False)
    assert subs["edit"]["options"][0]["autocomplete"] is True
    modes = [c["value"] for c in subs["subscribe"]["options"][1]["choices"]]
    assert modes == ["events", "all", "live"]


async def test_count_names_autocomplete_from_the_store(tmp_path: Path, world: World) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        answers = {}
        for typed in ("", "island", "BESS", "zzz"):
            ix = await fake.inject_autocomplete(
                world.guild,
                world.results,
                ALICE,
                "count",
                opts(count=typed),
                focused="count",
                subcommand="subscribe",
            )
            await fake.wait_for(lambda ix=ix: answered(ix))
            assert ix.response is not None
            assert ix.response.type == 8
            assert ix.choices is not None
            answers[typed] = [c["value"] for c in ix.choices]
        assert bot.requests == []  # autocomplete runs no command
    assert answers == {
        "": ["bessemer-2021", "staten-island-2022"],
        "island": ["staten-island-2022"],  # found by its id
        "BESS": ["bessemer-2021"],  # case does not matter
        "zzz": [],
    }
    assert fake.interactions[0].choices == [
        {"name": f"bessemer-2021 — {TITLE}", "value": "bessemer-2021"},
        {
            "name": "staten-island-2022 — Amazon JFK8 union election, Staten Island NY",
            "value": "staten-island-2022",
        },
    ]


async def test_chart_is_answered_with_the_png_for_the_channel(tmp_path: Path, world: World) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        empty = await bot.slash(ALICE, "chart", opts(count="bessemer-2021"), channel=world.results)
        await bot.ingest(84, 201)
        await bot.ingest(90, 230)
        world.vt.advance(PUBLIC_PER_CHANNEL.seconds)  # the channel may have a public reply again
        ix = await bot.slash(ALICE, "chart", opts(count="bessemer-2021"), channel=world.results)
        registered = fake.registered_commands[world.guild]

    (callback,) = ix.callbacks
    assert (callback.type, callback.flags) == (5, 0)  # a public deferral: the channel sees it
    shown = answer(ix)
    assert not shown.ephemeral
    assert shown.content == f"Chart of {TITLE}, as of update #2."
    assert shown.allowed_mentions == {"parse": []}
    (png,) = shown.attachments
    print(f"\n/count chart on Discord: {png.filename}, {png.size} bytes")
    assert png.filename == "bessemer-2021-2.png"
    assert png.size == len(png.data) < 200_000
    assert png_size(png.data) == (1200, 800)
    assert png.description is not None
    assert png.description.startswith(
        f"Chart of {TITLE}: votes for Yes (RWDSU), No union against ballots counted, "
        "updates #1 to #2. Unofficial: No union leads by 140."
    )
    assert fake.messages(world.results, include_deleted=False) == [shown]
    # Nothing to draw yet: a private error, the public placeholder taken back.
    error = answer(empty)
    assert error.ephemeral
    assert error.content == "bessemer-2021: no figures yet."
    assert error.attachments == []
    assert empty.original is not None
    assert empty.original.deleted
    (count,) = registered
    subs = {o["name"]: o for o in count["options"]}
    assert [(o["name"], o["type"], o.get("required")) for o in subs["chart"]["options"]] == [
        ("count", 3, True)
    ]
    assert subs["chart"]["options"][0]["autocomplete"] is True


async def test_admin_commands_need_manage_server_or_a_configured_admin(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    update = "update"
    async with running(world, config(tmp_path, world)) as bot:
        refused = await bot.slash(
            ALICE,
            update,
            opts(count="bessemer-2021", figures="yes=463 no=1100"),
            channel=world.results,
        )
        boss = await bot.slash(
            BOSS,
            update,
            opts(count="bessemer-2021", figures="yes=84 no=201", challenged=505, received=3215),
            channel=world.results,
        )
        carol = await bot.slash(
            CAROL,
            update,
            opts(count="bessemer-2021", figures="yes = 100, no = 1,250"),
            channel=world.results,
        )
        dave = await bot.slash(DAVE, "pause", opts(count="bessemer-2021"), channel=world.results)
        alice_status = await bot.slash(
            ALICE, "status", opts(count="bessemer-2021"), channel=world.results
        )
        async with bot.app.db.connect() as conn:
            audit = list(reversed(await audit_rows.recent(conn)))
            last = await tally_rows.last(conn, "bessemer-2021")

    assert refused.callbacks[0].flags == 64  # deferred ephemerally: errors stay private
    no = answer(refused)
    assert no.ephemeral
    assert no.content == "Error: only admins can update figures; ask an admin of this server"
    assert no.embeds == []
    accepted = answer(boss)
    assert accepted.ephemeral
    assert accepted.content.startswith("Accepted update #1 for bessemer-2021: ")
    assert accepted.embeds[0]["title"] == TITLE
    assert answer(carol).content.startswith("Accepted update #2 for bessemer-2021: ")
    assert answer(dave).content.startswith("Accepted update #3 for bessemer-2021: ")
    assert answer(alice_status).embeds[0]["title"] == TITLE  # anyone may ask for the status
    assert [(a.actor, a.action, a.allowed) for a in audit] == [
        (f"discord:{ALICE} (alice)", "update", False),
        (f"discord:{BOSS} (boss)", "update", True),
        (f"discord:{CAROL} (carol)", "update", True),
        (f"discord:{DAVE} (dave)", "pause", True),
    ]
    assert audit[0].detail == "refused: not an admin"
    assert audit[0].new == "update bessemer-2021 yes=463 no=1100"
    assert last is not None
    assert (dict(last.votes), last.challenged, last.received) == (
        {"yes": 100, "no": 1250},
        505,
        3215,
    )
    assert last.state.value == "paused"
    by_user = {r.user_id: r for r in bot.requests}
    # Manage Server, the configured role, the configured user: the policy's verdicts.
    assert [by_user[str(u)].admin for u in (ALICE, BOSS, CAROL, DAVE)] == [False, True, True, True]
    assert by_user[str(ALICE)].place == "server"
    # Nothing of this reached the channel: every answer was ephemeral but the status.
    assert [m.interaction_id for m in fake.messages(world.results)] == [alice_status.id]


# ------------------------------------------------------------------------ delivery


async def test_subscribed_channels_each_get_the_update_once(tmp_path: Path, world: World) -> None:
    fake = world.fake
    quiet = fake.add_channel(world.guild, "quiet")
    async with running(world, config(tmp_path, world)) as bot:
        answers = []
        for channel, mode in ((world.results, None), (world.union, "all"), (world.news, "events")):
            options = opts(count="bessemer-2021") + (opts(mode=mode) if mode else [])
            answers.append(answer(await bot.slash(ALICE, "subscribe", options, channel=channel)))
        message = await bot.ingest(84, 201)
        await bot.settle()
        deliveries = await bot.deliveries()

    assert [a.content for a in answers] == [
        "Subscribed this channel to bessemer-2021: significant events only.",
        "Subscribed this channel to bessemer-2021: every change.",
        "Subscribed this channel to bessemer-2021: significant events only.",
    ]
    assert not any(a.ephemeral for a in answers)
    assert message.significant
    by_channel = {int(d.channel.channel): d for d in deliveries}
    assert len(deliveries) == 3
    for channel in (world.results, world.union, world.news):
        (posted,) = bot_posts(fake, channel)
        delivery = by_channel[channel]
        assert delivery.status is DeliveryStatus.SENT
        assert delivery.platform_message_id == str(posted.id)
        assert posted.nonce == f"tb{delivery.id}"
        assert posted.allowed_mentions == {"parse": []}
        assert posted.content == ""
        (embed,) = posted.embeds
        assert embed["title"] == TITLE
        assert embed["description"].startswith("**First results: No union leads by 117**")
        (request,) = post_requests(fake, channel)
        assert request.json["enforce_nonce"] is True
    assert fake.messages(quiet) == []
    assert fake.count_429 == 0


@pytest.mark.parametrize(
    ("world", "scenario"),
    [
        ({"channel_msg_window_s": 3.0}, "shared-429s"),
        ({"global_limit_per_s": 3, "global_window_s": 0.25}, "global-limit"),
    ],
    indirect=["world"],
)
async def test_a_429_burst_loses_and_doubles_nothing(
    tmp_path: Path, world: World, scenario: str
) -> None:
    fake = world.fake
    channels = [world.results, world.union, world.news] + [
        fake.add_channel(world.guild, f"local-{i}") for i in range(3)
    ]
    figures = [(10, 5), (10, 20), (30, 20), (30, 40)]  # the lead changes every time
    started = time.monotonic()
    async with running(world, config(tmp_path, world)) as bot:
        for channel in channels:
            options = opts(count="bessemer-2021", mode="all")
            await bot.slash(ALICE, "subscribe", options, channel=channel)
        if scenario == "shared-429s":
            # Another process with the same token has just used up one channel's bucket...
            url = f"{fake.base_url}/channels/{channels[0]}/messages"
            headers = {"Authorization": f"Bot {TOKEN}"}
            async with aiohttp.ClientSession(headers=headers) as other:
                for i in range(fake.channel_msg_limit):
                    async with other.post(url, json={"content": f"other {i}"}) as resp:
                        assert resp.status == 200
            # ...and Discord sheds load on the others with 429s longer than discord.py will
            # sleep through.
            others = "|".join(str(c) for c in channels[1:])
            fake.fail_next(rf"^/channels/({others})/messages$", 429, times=4, retry_after=45.0)
        expected = [(await bot.ingest(y, n)).headline for y, n in figures]
        await bot.settle()
        deliveries = await bot.deliveries()
        stats = bot.app.dispatcher.stats
    elapsed = time.monotonic() - started

    limited = [r for r in fake.requests if r.status == 429]
    print(
        f"\n{scenario}: {fake.count_429} x 429 for {len(channels) * len(figures)} posts, "
        f"{stats.rate_limited} rescheduled by the dispatcher, {elapsed:.2f} s"
    )
    assert fake.count_429 == len(limited) > 0
    assert [d for d in deliveries if d.status is not DeliveryStatus.SENT] == []
    for channel in channels:
        posted = [m for m in bot_posts(fake, channel) if not m.content.startswith("other")]
        headlines = [m.embeds[0]["description"].split("\n")[0].strip("*") for m in posted]
        assert headlines == expected  # nothing lost, nothing doubled, in order
        assert len({m.nonce for m in posted}) == len(figures)
    if scenario == "shared-429s":
        # Every 429 reached the dispatcher (discord.py waits out none by itself): the four of
        # 45 s and the one of the channel the other process used up. It waited each out,
        # counting no failed attempt.
        assert (stats.rate_limited, stats.retried) == (5, 0)
        assert all(d.attempts == 0 for d in deliveries)
        assert any(r.response_headers.get("X-RateLimit-Scope") == "user" for r in limited)
    else:
        assert all(r.response["global"] for r in limited)
        assert stats.rate_limited <= fake.count_429  # the others: the answers to commands
        assert stats.retried == 0


@pytest.mark.parametrize("status", [503, 429], ids=["503-after-commit", "429-after-commit"])
async def test_a_post_whose_answer_was_lost_appears_once(
    tmp_path: Path, world: World, status: int
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await bot.slash(ALICE, "subscribe", opts(count="bessemer-2021"), channel=world.results)
        # Discord creates the message, but the answer is lost on the way back.
        fake.fail_next(r"^/channels/\d+/messages$", status, after_commit=True, retry_after=45.0)
        await bot.ingest(84, 201)
        await bot.settle()
        (delivery,) = await bot.deliveries()

    (posted,) = bot_posts(fake, world.results)
    first, second = post_requests(fake, world.results)
    assert (first.status, second.status) == (status, 200)
    assert first.json["nonce"] == second.json["nonce"] == f"tb{delivery.id}"
    assert delivery.status is DeliveryStatus.SENT
    # failed once (a 429 is no failed attempt), then Discord returned the first message
    assert delivery.attempts == (1 if status == 503 else 0)
    assert delivery.platform_message_id == str(posted.id)


async def test_the_final_tally_carries_its_chart_in_every_channel_once(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    channels = (world.results, world.union, world.news)
    async with running(world, config(tmp_path, world)) as bot:
        for channel, mode in zip(channels, ("events", "all", "live"), strict=True):
            options = opts(count="bessemer-2021", mode=mode)
            await bot.slash(ALICE, "subscribe", options, channel=channel)
        await bot.ingest(84, 201)  # first results: significant
        await bot.settle()
        routine = await bot.ingest(90, 230)
        await bot.settle()
        # The final's answer is lost once in one channel: the retry must not double it.
        fake.fail_next(rf"^/channels/{world.results}/messages$", 503, after_commit=True)
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        deliveries = await bot.deliveries()

    assert not routine.significant
    assert final.final
    assert all(d.status is DeliveryStatus.SENT for d in deliveries)
    for channel in channels:
        posts = bot_posts(fake, channel)
        with_chart = [m for m in posts if m.attachments]
        assert with_chart == [posts[-1]]  # the final only, once
        (embed,) = posts[-1].embeds
        assert embed["description"].startswith(f"**{final.headline}**")
        (png,) = posts[-1].attachments
        assert png.filename == "bessemer-2021-3.png"
        assert embed["image"]["url"] == "attachment://bessemer-2021-3.png"  # inside the card
        assert png.size == len(png.data) < 200_000
        assert png_size(png.data) == (1200, 800)
        assert png.description is not None
        assert "Final tally: No union wins" in png.description
    print(f"\nfinal chart on Discord: {png.size} bytes")
    first, second = post_requests(fake, world.results)[-2:]
    assert (first.status, second.status) == (503, 200)
    assert len(first.files) == len(second.files) == 1  # the retry sent it again, Discord
    assert first.json["nonce"] == second.json["nonce"]  # kept the first message
    union_posts = bot_posts(fake, world.union)
    assert len(union_posts) == 3  # all: first results, the routine update, the final
    assert union_posts[1].embeds[0]["description"].startswith(f"**{routine.headline}**")


async def test_without_attach_files_the_final_goes_without_its_chart(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await bot.slash(ALICE, "subscribe", opts(count="bessemer-2021"), channel=world.results)
        client = bot.adapter.gateway_client(world.guild)
        updated = asyncio.create_task(client.wait_for("guild_channel_update", timeout=5))
        fake.revoke_attach_files(world.results)
        await updated
        final = await bot.ingest(738, 1798, state=TallyState.FINAL)
        await bot.settle()
        (delivery,) = await bot.deliveries()
        subscription = await bot.subscription(world.results)

    (posted,) = bot_posts(fake, world.results)
    assert posted.embeds[0]["description"].startswith(f"**{final.headline}**")
    assert posted.attachments == []
    assert "image" not in posted.embeds[0]
    refused, sent = post_requests(fake, world.results)
    assert (refused.status, refused.response["code"], len(refused.files)) == (403, 50013, 1)
    assert (sent.status, len(sent.files)) == (200, 0)
    assert delivery.status is DeliveryStatus.SENT
    assert delivery.attempts == 0  # one delivery, two requests
    assert subscription.enabled


async def test_live_scoreboard_is_edited_in_place_and_reposted_when_deleted(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        await bot.ingest(84, 201)
        options = opts(count="bessemer-2021", mode="live")
        subscribed = answer(await bot.slash(ALICE, "subscribe", options, channel=world.results))
        await bot.settle()
        (board,) = bot_posts(fake, world.results)
        assert (await bot.subscription(world.results)).live_message_id == str(board.id)

        routine = await bot.ingest(90, 230)
        await bot.settle()
        assert not routine.significant
        assert bot_posts(fake, world.results) == [board]  # edited, not posted
        assert len(board.edits) == 1
        assert board.embeds[0]["description"].startswith(f"**{routine.headline}**")
        assert board.allowed_mentions == {"parse": []}

        # A moderator deletes the scoreboard: the next update posts a new one.
        url = f"{fake.base_url}/channels/{world.results}/messages/{board.id}"
        async with (
            aiohttp.ClientSession(headers={"Authorization": f"Bot {TOKEN}"}) as mod,
            mod.delete(url) as resp,
        ):
            assert resp.status == 204
        after_delete = await bot.ingest(95, 260)
        await bot.settle()
        _, new_board = bot_posts(fake, world.results)
        assert (await bot.subscription(world.results)).live_message_id == str(new_board.id)
        assert new_board.embeds[0]["description"].startswith(f"**{after_delete.headline}**")

        # A significant event: the scoreboard is edited and a new message announces it.
        lead_change = await bot.ingest(300, 270)
        await bot.settle()
        posts = bot_posts(fake, world.results)
        deliveries = await bot.deliveries()

    assert subscribed.content.endswith("a live scoreboard plus significant events.")
    assert lead_change.significant
    assert [m.id for m in posts[:2]] == [board.id, new_board.id]
    assert board.deleted
    assert len(posts) == 3
    assert posts[2].embeds[0]["description"].startswith(f"**{lead_change.headline}**")
    assert new_board.embeds[0]["description"].startswith(f"**{lead_change.headline}**")
    assert len(new_board.edits) == 1
    edits = [r for r in fake.requests if r.method == "PATCH"]
    assert [r.status for r in edits] == [200, 404, 200]  # the 404: the deleted scoreboard
    assert edits[1].response["code"] == 10008
    assert all(d.status is DeliveryStatus.SENT for d in deliveries)
    assert fake.count_429 == 0


async def test_a_gone_channel_or_lost_permission_disables_it_and_tells_admins(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    async with running(world, config(tmp_path, world)) as bot:
        for channel in (world.results, world.union, world.news):
            await bot.slash(ALICE, "subscribe", opts(count="bessemer-2021"), channel=channel)
        client = bot.adapter.gateway_client(world.guild)
        deleted = asyncio.create_task(client.wait_for("guild_channel_delete", timeout=5))
        fake.delete_channel(world.union)
        await deleted
        updated = asyncio.create_task(client.wait_for("guild_channel_update", timeout=5))
        fake.revoke_send(world.news)
        await updated

        await bot.ingest(84, 201)
        await bot.settle()
        await bot.ingest(84, 400)  # routine for "events" subscribers; nothing for disabled ones
        await bot.ingest(500, 400)  # the lead changes: significant
        await bot.settle()
        gone, lost = await bot.subscription(world.union), await bot.subscription(world.news)
        listed = answer(await bot.slash(BOSS, "deliveries", channel=world.results))

    assert not gone.enabled
    assert gone.disabled_reason is not None
    assert gone.disabled_reason.startswith("#union-hall no longer exists (deleted?)")
    assert not lost.enabled
    assert lost.disabled_reason is not None
    assert lost.disabled_reason.startswith(
        "the bot lost access to #news (Bessemer Watch): give it View Channel, Send Messages "
        "and Embed Links there; Discord answered 403 (code 50013)"
    )
    assert len(post_requests(fake, world.union)) == 1  # tried once, never again
    assert len(post_requests(fake, world.news)) == 1
    assert len(bot_posts(fake, world.results)) == 2  # the healthy channel carries on
    notices = bot_posts(fake, world.admin)
    assert len(notices) == 2
    assert all(n.allowed_mentions == {"parse": []} for n in notices)
    place = f"discord:{world.guild}"
    assert all(
        n.content.startswith(f"⚠️ tallybot stopped posting in 1 channel of {place}: ")
        for n in notices
    )
    text = "\n".join(n.content for n in notices)
    assert f"no longer exists (deleted?) (bessemer-2021 in {place}/{world.union})" in text
    assert "Give it View Channel, Send Messages and Embed Links there" in text
    assert listed.ephemeral
    assert listed.content.startswith("Messages that could not be delivered:")
    assert listed.content.count("bessemer-2021 #1 to discord:") == 2


async def test_a_hostile_count_title_pings_nobody(tmp_path: Path, world: World) -> None:
    fake = world.fake
    voters = fake.add_role(world.guild, "voters", mentionable=True)
    fake.guilds[world.guild].members[fake.bot_user_id].extra_permissions |= MENTION_EVERYONE
    hostile = f"@everyone <@&{voters}> @here <@{ALICE}> test"
    cfg = config(tmp_path, world, count_table("hostile", hostile))
    async with running(world, cfg) as bot:
        status = answer(
            await bot.slash(ALICE, "status", opts(count="hostile"), channel=world.results)
        )
        listed = answer(await bot.slash(ALICE, "list", channel=world.results))
        await bot.slash(ALICE, "subscribe", opts(count="hostile"), channel=world.results)
        await bot.app.pipeline.ingest(tally(84, 201, count_id="hostile"))
        await bot.settle()
        (posted,) = bot_posts(fake, world.results)
        # The control: the same text sent the naive way does ping (the fake would notice).
        naive = await bot.adapter.client.get_partial_messageable(world.results).send(
            hostile, allowed_mentions=discord.AllowedMentions.all()
        )

    control = fake.message(naive.id)
    assert (control.mention_everyone, control.mention_roles, control.mentions) == (
        True,
        [voters],
        [ALICE],
    )
    assert status.content == f"{escape(hostile)}: no figures yet."
    assert "@\u200beveryone" in status.content
    assert escape(hostile) in listed.content
    assert posted.embeds[0]["title"] == escape(hostile)
    for message in (status, listed, posted):
        assert message.allowed_mentions == {"parse": []}
        assert (message.mention_everyone, message.mention_roles, message.mentions) == (
            False,
            [],
            [],
        )


async def test_the_longest_title_and_the_most_choices_are_sent_within_discords_limits(
    tmp_path: Path, world: World
) -> None:
    fake = world.fake
    most = MAX_CHOICES  # as many as a count may have, each label as long as it may be
    choices = [(f"c{i}", f"Candidate number {i} " + "with a long name " * 10) for i in range(most)]
    choices = [(cid, label[:MAX_LABEL]) for cid, label in choices]
    cfg = config(tmp_path, world, count_table("big", "A" * 110 + " @everyone", choices))
    async with running(world, cfg) as bot:
        await bot.slash(ALICE, "subscribe", opts(count="big"), channel=world.results)
        votes = {cid: 10 + 3 * i for i, (cid, _) in enumerate(choices)}
        result = await bot.app.pipeline.ingest(Tally("big", votes, T0, "county"))
        assert result.message is not None
        await bot.settle()
        deliveries = await bot.deliveries()

    (posted,) = bot_posts(fake, world.results)  # accepted by the fake: no 400
    assert [d.status for d in deliveries] == [DeliveryStatus.SENT]
    (embed,) = posted.embeds
    assert len(embed["title"]) <= MAX_TITLE
    assert embed["title"].startswith("A" * 110)
    assert len(embed["fields"]) == most
    assert all(f"{10 + 3 * i}" in json.dumps(embed["fields"]) for i in range(most))
    assert embed["color"] == PALETTE[(most - 1) % len(PALETTE)].value  # the last choice leads


# ------------------------------------------------------------------- units and setup


def _message(
    title: str, n: int, *, label: str = "Choice", note: str = "", footer: str = "f"
) -> Message:
    lines = tuple(
        ChoiceLine(
            choice_id=f"c{i}",
            label=f"{label} {i}",
            votes=i,
            votes_text=f"{i:,}",
            share_text="1.0%",
            share=0.01,
            bar="█░░░",
            note=note,
            leading=i == 0,
            winner=False,
            position=i,
        )
        for i in range(n)
    )
    return Message(
        count_id="x",
        title=title,
        seq=1,
        headline="Choice 0 leads",
        choices=lines,
        lines=("Margin line.", "What remains."),
        footer=Timed.of(footer),
        significance=Significance.ROUTINE,
        events=(),
        leader="c0",
        winner=None,
        final=False,
    )


def test_embed_keeps_every_limit_however_long_the_texts() -> None:
    big = _message(
        "@everyone " + "T" * 400,
        30,
        label="L" * 300,
        note="N" * 2000,
        footer="F" * 3000,
    )
    embed = message_embed(big)
    assert embed_problems(embed) == []
    assert len(embed) <= 6000
    assert embed.title is not None
    assert len(embed.title) == MAX_TITLE
    assert embed.title.startswith("@\u200beveryone TTT")
    assert len(embed.fields) == 25
    assert embed.fields[-1].name == "…and 6 more choices"
    assert all(len(f.value or "") <= MAX_FIELD_VALUE for f in embed.fields)

    small = message_embed(_message("Bessemer", 2, note="needs 5 more"))
    assert embed_problems(small) == []
    assert small.title == "Bessemer"
    assert small.description == "**Choice 0 leads**\nMargin line.\nWhat remains."
    assert [(f.name, f.value) for f in small.fields] == [
        ("▶ Choice 0", "**0** votes · 1.0%\n`█░░░`\nneeds 5 more"),
        ("Choice 1", "**1** vote · 1.0%\n`█░░░`\nneeds 5 more"),
    ]
    assert small.colour == PALETTE[0]
    assert small.footer.text == "f"
    exactly_25 = message_embed(_message("t", 25))
    assert len(exactly_25.fields) == 25
    assert exactly_25.fields[-1].name == "Choice 24"  # no summary needed


def test_fit_cuts_only_the_longest_texts() -> None:
    assert fit(["abc", "de"], 10) == ["abc", "de"]
    assert fit(["a" * 10, "b" * 10, "cc"], 12) == ["a" * 4 + "…", "b" * 4 + "…", "cc"]
    assert sum(map(len, fit(["x" * 5000] * 3, 6000))) <= 6000


def test_limits_and_nonces() -> None:
    def windows(method: str) -> list[tuple[str, Window, bool]]:
        return [(b.name, b.window, b.per_channel) for b in DISCORD_LIMITS.buckets(Route(method))]

    assert windows("POST /channels/{channel_id}/messages") == [
        ("messages per channel", Window(5, 5.0), True),
        ("global", Window(50, 1.0), False),
    ]
    assert windows("PATCH /channels/{channel_id}/messages/{message_id}") == [
        ("edits per channel", Window(5, 5.0), True),
        ("global", Window(50, 1.0), False),
    ]
    assert windows("GET /channels/{channel_id}/messages") == [
        ("reads per channel", Window(5, 5.0), True),
        ("global", Window(50, 1.0), False),
    ]
    assert windows("PUT /applications/{application_id}/commands") == [
        ("global", Window(50, 1.0), False)
    ]
    assert DISCORD_LIMITS.startup_requests == 7
    assert NONCE_TRUST_S == 60.0
    assert MAX_RATELIMIT_TIMEOUT == 30.0
    assert nonce_for("tb12345") == "tb12345"
    long = nonce_for("x" * 40)
    assert len(long) == 25
    assert long == nonce_for("x" * 40)


class _Response:
    def __init__(self, status: int, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.reason = "reason"
        self.headers = headers or {}


def _http(cls: type[discord.HTTPException], status: int, code: int, **headers: str) -> Any:
    return cls(_Response(status, headers), {"code": code, "message": "nope"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("exc", "editing", "kind", "words"),
    [
        (discord.RateLimited(45.5), False, RateLimited, "rate limited"),
        (
            _http(discord.HTTPException, 429, 0, **{"Retry-After": "7"}),
            False,
            RateLimited,
            "rate",
        ),
        (_http(discord.DiscordServerError, 503, 0), False, TransientDeliveryError, "503"),
        (_http(discord.HTTPException, 401, 0), False, TransientDeliveryError, "DISCORD_TOKEN"),
        (aiohttp.ServerDisconnectedError(), False, TransientDeliveryError, "cannot reach"),
        (TimeoutError(), False, TransientDeliveryError, "cannot reach"),
        (_http(discord.NotFound, 404, 10003), False, PermanentDeliveryError, "no longer exists"),
        (_http(discord.NotFound, 404, 10003), True, PermanentDeliveryError, "no longer exists"),
        (_http(discord.Forbidden, 403, 50001), False, PermanentDeliveryError, "Send Messages"),
        (_http(discord.HTTPException, 400, 50035), False, PermanentDeliveryError, "invalid"),
        (_http(discord.NotFound, 404, 10008), True, MessageGone, "can no longer be edited"),
        (_http(discord.HTTPException, 400, 30046), True, MessageGone, "can no longer be edited"),
    ],
)
def test_errors_are_translated_for_the_dispatcher(
    exc: BaseException, editing: bool, kind: type[Exception], words: str
) -> None:
    adapter = DiscordAdapter(
        DiscordSettings(), bare_context(secrets={"DISCORD_TOKEN": Secret("DISCORD_TOKEN", "t")})
    )
    error = adapter.translate(exc, ChannelRef(Platform("discord"), "1", "2"), editing=editing)
    assert type(error) is kind
    assert words in str(error)
    if isinstance(exc, discord.RateLimited):
        assert isinstance(error, TransientDeliveryError)
        assert error.retry_after == 45.5
    if isinstance(exc, discord.HTTPException) and exc.status == 429:
        assert isinstance(error, TransientDeliveryError)
        assert error.retry_after == 7.0


async def test_a_refused_token_or_a_dead_gateway_is_a_clear_error(
    tmp_path: Path, world: World
) -> None:
    settings: DiscordSettings = config(tmp_path, world).settings("discord")
    wrong = DiscordAdapter(
        settings, bare_context(secrets={"DISCORD_TOKEN": Secret("DISCORD_TOKEN", "nope")})
    )
    with pytest.raises(ConfigError, match="DISCORD_TOKEN was refused by Discord"):
        await wrong.__aenter__()
    assert discord.http.Route.BASE == DEFAULT_BASE  # restored after the failure too

    nowhere = settings.model_copy(
        update={"gateway_url": world.fake.base_url.replace("http://", "ws://") + "/no-gateway-here"}
    )
    dead = DiscordAdapter(
        nowhere,
        bare_context(secrets={"DISCORD_TOKEN": Secret("DISCORD_TOKEN", TOKEN)}),
        ready_timeout=0.3,
    )
    # Whether discord.py gives up first or the wait for READY times out, the error says where.
    with pytest.raises(DiscordStartError, match=r"gateway.*/no-gateway-here"):
        await dead.__aenter__()
    assert discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY == DEFAULT_GATEWAY
    assert world.fake.gateway.identify_count == 0


def test_registry_builds_the_discord_adapter_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = {"discord": {"guilds": [123], "admin_roles": ["mods"]}}
    cfg = parse_config(raw, tmp_path / "t.toml")
    monkeypatch.delenv("DISCORD_TOKEN", raising=False)
    monkeypatch.delenv("DISCORD_TOKEN_FILE", raising=False)
    with pytest.raises(ConfigError, match="DISCORD_TOKEN is not set"):
        adapter_factories(cfg)
    secret_file = tmp_path / "token"
    secret_file.write_text("token-from-a-file\n")
    monkeypatch.setenv("DISCORD_TOKEN_FILE", str(secret_file))
    commands = stand_in_commands()
    adapter = adapter_factories(cfg)[Platform("discord")](commands)
    assert isinstance(adapter, DiscordAdapter)
    assert adapter._token.reveal() == "token-from-a-file"
    assert adapter.config.guilds == (123,)
    assert adapter.admins.roles == {"mods"}
    assert isinstance(adapter.context.admins, DiscordAdmins)  # the plug-in's policy
    assert adapter.platform == Platform("discord")
    assert isinstance(Notice("x"), Notice)
