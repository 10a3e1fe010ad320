"""FakeDiscord: state, public test API and the aiohttp server tying REST and gateway together."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web

from tests.fakes.loopback.hangs import Hangs
from tests.fakes.loopback.server import LoopbackServer

from . import announce, inject, interactions, rest, threads
from .gateway import GatewayHub
from .interaction import FakeInteraction
from .limits import RateLimits, permissions_for
from .models import (
    DEFAULT_BOT_PERMISSIONS,
    JSON,
    Channel,
    Failure,
    Guild,
    RecordedAttachment,
    RecordedMessage,
    RecordedRequest,
    Snowflakes,
    User,
    Webhook,
)
from .payloads import member as member_payload
from .payloads import message as message_payload
from .payloads import user as user_payload
from .router import API_PREFIX, Route, dispatch
from .world import WorldSetup, invite_permissions

DM_OPENS = (5, 5.0)


class FakeDiscord(WorldSetup, LoopbackServer):
    """A local Discord (REST under /api/v10 and the gateway at /gw) for the real discord.py.

    Use ``async with FakeDiscord() as fake:`` (binds 127.0.0.1 on a free port) and
    ``with fake.patch_discord_py():`` around the client's life. Set up the world with
    ``add_guild``/``add_channel``/``add_role``/``add_member``; events for changes made after
    the client connected go out over the gateway (CHANNEL_CREATE, GUILD_ROLE_CREATE, ...).

    Enforced like Discord: ``Bot <token>`` auth (401), payload limits (400/50035, 50006,
    413/40005), per-channel message buckets (create, edit and delete each ``channel_msg_limit``
    per ``channel_msg_window_s``, also used for interaction webhooks), a global per-bot limit
    (interaction routes excluded), rate-limit headers, 429 bodies with ``Via``, announcement
    channels (following, crossposting to every follower, the hourly bound on publishing, Manage
    Webhooks: ``announce``), nonce dedup (``enforce_nonce``), permissions (403/50001, 50013),
    unknown objects (404 with Discord's codes), the 3 s first-response deadline (10062), a
    single acknowledgement (40060), the 15 min token, privileged intents (close 4014) and the
    gateway's protocol errors (4001-4014). Unknown routes answer 404 ``{"code": 0}``. Given an
    ``identify_clock`` (``time.monotonic``, or a faster one for a shortened window), also the
    identify limit: one session start per 5 s in each bucket ``shard % max_concurrency``, beyond
    which IDENTIFY is answered Invalid Session (op 9); without one, none (a test that restarts
    the bot at once would otherwise wait 5 s on the real clock).

    ``clock`` (default ``time.monotonic``; in tests the ``monotonic`` of
    :class:`bot.testing.clock.FakeClock`, the bot's own) drives buckets, deadlines and
    timestamps; discord.py itself sleeps on the real clock for ``retry_after``, so a test that
    lets discord.py wait keeps windows small and the clock moving.
    ``wait_for`` re-checks its predicate whenever the fake records something (a request,
    a gateway frame): use it for fake-side state, and the client's own events for its cache.
    A bug inside the fake answers 500 and is raised again when the ``async with`` exits.
    """

    def __init__(
        self,
        *,
        token: str = "fake-discord-bot-token",
        global_limit_per_s: int = 50,
        global_window_s: float = 1.0,
        channel_msg_limit: int = 5,
        channel_msg_window_s: float = 5.0,
        dm_opens: tuple[int, float] = DM_OPENS,
        clock: Callable[[], float] | None = None,
        attachment_size_limit: int = 10 * 1024 * 1024,
        privileged_intents: int = 0,
        recommended_shards: int = 1,
        max_concurrency: int = 1,
        identify_clock: Callable[[], float] | None = None,
        nonce_window_s: float = 300.0,
        interaction_deadline_s: float = 3.0,
        bot_name: str = "tallybot",
        invite: str | None = None,
        publish_limit: int = 10,
        publish_window_s: float = 3600.0,
        record: bool = True,
    ) -> None:
        """``invite``: the install link the bot was added to every server with (``tallybot
        invite``'s): its role there has the link's permissions and no more; without one, the
        role has what @everyone has by default. ``publish_limit`` per ``publish_window_s``: the
        crossposts each announcement channel takes (Discord's 10 an hour). ``record``: keep
        every request in ``requests`` (a bench of many requests turns it off and reads
        ``request_count``)."""
        self.token = token
        self.clock: Callable[[], float] = clock or time.monotonic
        self._clock0 = self.clock()
        self._epoch0 = time.time()
        self.snowflakes = Snowflakes(lambda: int(self.wall_time() * 1000))
        self.channel_msg_limit = channel_msg_limit
        self.dm_open_limit, self.dm_open_window_s = dm_opens
        """Opening DM channels (``POST /users/@me/channels``), per bot: Discord publishes no
        figure; the fake holds the bot to the pace tallybot assumes (5 per 5 s) unless told."""
        self.channel_msg_window_s = channel_msg_window_s
        self.attachment_size_limit = attachment_size_limit
        self.privileged_intents = privileged_intents
        self.bot_role_permissions = (
            DEFAULT_BOT_PERMISSIONS if invite is None else invite_permissions(invite)
        )
        self.recommended_shards = recommended_shards
        self.max_concurrency = max_concurrency
        self.identify_clock = identify_clock
        self.nonce_window_s = nonce_window_s
        self.interaction_deadline_s = interaction_deadline_s
        self.limits = RateLimits(global_limit_per_s, global_window_s)

        self.app_id = self.snowflakes.next()
        self.bot_user_id = self.snowflakes.next()
        self.owner_user_id = self.snowflakes.next()
        self.users: dict[int, User] = {
            self.bot_user_id: User(self.bot_user_id, bot_name, bot=True),
            self.owner_user_id: User(self.owner_user_id, "app-owner"),
        }
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.webhooks: dict[int, Webhook] = {}
        self.publish_limit = publish_limit
        self.publish_window_s = publish_window_s
        self.record = record
        self.request_count = 0
        self._channel_messages: dict[int, list[RecordedMessage]] = {}
        self._messages: dict[int, RecordedMessage] = {}
        self.requests: list[RecordedRequest] = []
        self.count_429 = 0
        self.count_invalid = 0
        self.registered_commands: dict[int | None, list[JSON]] = {}
        self.interactions: list[FakeInteraction] = []
        self._failures: list[Failure] = []
        self.hangs = Hangs()
        self.internal_errors: list[Exception] = []  # bugs in the fake; raised at exit
        self._changed = asyncio.Event()
        self.gateway = GatewayHub(self)
        self.ready_event = self.gateway.ready_event
        self._routes: list[Route] = (
            rest.ROUTES + interactions.ROUTES + threads.ROUTES + announce.ROUTES
        )

    # ----------------------------------------------------------------- lifecycle

    def application(self) -> web.Application:
        app = web.Application(client_max_size=self.attachment_size_limit * 2 + 1024 * 1024)
        app.router.add_get("/gw", self.gateway.handle)
        app.router.add_get("/attachments/{channel_id}/{attachment_id}/{filename}", self._cdn)
        app.router.add_route("*", "/{tail:.*}", self._rest)
        return app

    async def stopping(self) -> None:
        await self.gateway.close_all()

    def check(self, exc: BaseException | None) -> None:
        if self.internal_errors and exc is None:
            first = self.internal_errors[0]
            raise RuntimeError(
                f"FakeDiscord hit internal errors: {self.internal_errors!r}"
            ) from first

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PREFIX}"

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gw"

    @contextlib.contextmanager
    def patch_discord_py(self) -> Iterator[None]:
        """Point discord.py's REST base and default gateway here; restore them on exit."""
        import yarl

        with warnings.catch_warnings():
            # discord.player imports audioop, deprecated since Python 3.11.
            warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
            import discord.gateway
            import discord.http

        old_base = discord.http.Route.BASE
        old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
        discord.http.Route.BASE = self.base_url
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        try:
            yield
        finally:
            discord.http.Route.BASE = old_base
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway

    async def _rest(self, request: web.Request) -> web.Response:
        return await dispatch(self, request, self._routes)

    async def _cdn(self, request: web.Request) -> web.Response:
        att_id = int(request.match_info["attachment_id"])
        for msg in self._messages.values():
            for att in msg.attachments:
                if att.id == att_id:
                    ctype = att.content_type or "application/octet-stream"
                    return web.Response(body=att.data, headers={"Content-Type": ctype})
        return web.Response(status=404, text="Not Found")

    # ------------------------------------------------------------------ helpers

    def wall_time(self) -> float:
        """Epoch seconds, moving with the fake's clock."""
        return self._epoch0 + (self.clock() - self._clock0)

    def notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5) -> None:  # noqa: ASYNC109
        """Wait until ``predicate()`` holds, re-checking after every recorded change."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    async def wait_connected(self, timeout: float = 5) -> None:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            await self.ready_event.wait()

    def bucket_limits(self, kind: str) -> tuple[int, float]:
        if kind == "messages":
            return self.channel_msg_limit, self.channel_msg_window_s
        if kind == "publish":
            return self.publish_limit, self.publish_window_s
        if kind == "dm":
            return self.dm_open_limit, self.dm_open_window_s
        return 50, 1.0

    def fail_next(
        self,
        path_regex: str,
        status: int,
        times: int = 1,
        *,
        method: str | None = None,
        after_commit: bool = False,
        retry_after: float = 0.1,
    ) -> None:
        """Answer the next ``times`` requests whose path matches with ``status``.

        ``after_commit=True`` processes the request first (the message is created) and then
        answers with the failure, as if the response was lost on the way back. A 429 here is a
        ``shared``-scope limit with ``retry_after``.
        """
        self._failures.append(
            Failure(re.compile(path_regex), status, times, method, after_commit, retry_after)
        )

    def take_failure(self, method: str, path: str, *, after_commit: bool) -> Failure | None:
        for failure in self._failures:
            if failure.after_commit != after_commit or not failure.pattern.search(path):
                continue
            if failure.method is not None and failure.method != method:
                continue
            failure.times -= 1
            if failure.times <= 0:
                self._failures.remove(failure)
            return failure
        return None

    # -------------------------------------------------------------- inspection

    def messages(self, channel_id: int, *, include_deleted: bool = True) -> list[RecordedMessage]:
        """Messages in a channel (not ephemeral ones), oldest first."""
        msgs = self._channel_messages.get(channel_id, [])
        return [m for m in msgs if include_deleted or not m.deleted]

    def message(self, message_id: int) -> RecordedMessage:
        return self._messages[message_id]

    def bot_permissions(self, channel_id: int) -> int:
        chan = self.channels[channel_id]
        if chan.guild_id is None:
            return 0
        return permissions_for(self.guilds[chan.guild_id], self.bot_user_id, chan)

    def store_message(self, msg: RecordedMessage) -> None:
        self._messages[msg.id] = msg
        if not msg.ephemeral:
            self._channel_messages.setdefault(msg.channel_id, []).append(msg)
            self.channels[msg.channel_id].last_message_id = msg.id

    def message_json(self, msg: RecordedMessage, *, gateway: bool = False) -> JSON:
        chan = self.channels[msg.channel_id]
        guild = self.guilds.get(chan.guild_id) if chan.guild_id is not None else None
        author = self.users[msg.author_id]
        metadata = None
        ix = interactions.find(self, msg.interaction_id)
        if ix is not None:
            metadata = ix.metadata()
        out = message_payload(
            msg,
            author=user_payload(author),
            mentions=[user_payload(self.users[u]) for u in msg.mentions],
            attachment_url=self.attachment_url,
            interaction_metadata=metadata,
            application_id=self.app_id if msg.webhook_id is not None else None,
        )
        if gateway and guild is not None:
            out["guild_id"] = str(guild.id)
            m = guild.members.get(msg.author_id)
            if m is not None:
                out["member"] = member_payload(m, author, with_user=False)
        return out

    def attachment_url(self, channel_id: int, att: RecordedAttachment) -> str:
        return f"http://127.0.0.1:{self.port}/attachments/{channel_id}/{att.id}/{att.filename}"

    # ------------------------------------------------------------ interactions

    async def inject_slash_command(
        self,
        guild_id: int | None,
        channel_id: int,
        user_id: int,
        name: str,
        options: list[dict[str, Any]],
        *,
        subcommand: str | None = None,
        allow_unregistered: bool = False,
        allow_guild_only: bool = False,
    ) -> FakeInteraction:
        """Send INTERACTION_CREATE (type 2) for a registered chat-input command.

        ``subcommand`` may be "sub" or "group sub". Option ``type`` may be left out: it is
        taken from the registered command, which must exist (Discord only sends commands it
        knows) unless ``allow_unregistered``. ``guild_id`` None: in the user's DM with the bot
        (``channel_id``: ``dm_channel(user_id)``), where a guild-only command is refused unless
        ``allow_guild_only`` (a request Discord would not send, to test what the bot makes of
        it).
        """
        return await inject.inject_command(
            self,
            guild_id,
            channel_id,
            user_id,
            name,
            options,
            subcommand=subcommand,
            focused=None,
            allow_unregistered=allow_unregistered,
            allow_guild_only=allow_guild_only,
        )

    async def inject_autocomplete(
        self,
        guild_id: int | None,
        channel_id: int,
        user_id: int,
        name: str,
        options: list[dict[str, Any]],
        *,
        focused: str,
        subcommand: str | None = None,
        allow_unregistered: bool = False,
        allow_guild_only: bool = False,
    ) -> FakeInteraction:
        """Send an autocomplete interaction (type 4) with option ``focused`` being typed."""
        return await inject.inject_command(
            self,
            guild_id,
            channel_id,
            user_id,
            name,
            options,
            subcommand=subcommand,
            focused=focused,
            allow_unregistered=allow_unregistered,
            allow_guild_only=allow_guild_only,
        )

    async def inject_component(
        self,
        guild_id: int,
        channel_id: int,
        user_id: int,
        message_id: int,
        custom_id: str,
        *,
        component_type: int = 2,
        values: list[str] | None = None,
    ) -> FakeInteraction:
        """Send a component interaction (type 3), e.g. a button click on a bot message."""
        return await inject.inject_component(
            self, guild_id, channel_id, user_id, message_id, custom_id, component_type, values
        )

    async def inject_modal_submit(
        self,
        shown: FakeInteraction,
        values: dict[str, str],
        *,
        user_id: int | None = None,
        custom_id: str | None = None,
        forged: bool = False,
    ) -> FakeInteraction:
        """Send MODAL_SUBMIT (type 5): the modal that ``shown`` was answered with, filled in
        with ``values`` (by text input custom_id) by the member it was shown to (``user_id``
        other than theirs, or a ``custom_id`` other than the modal's, is refused). ``forged``:
        sent anyway, by ``user_id`` with ``custom_id`` (a client that makes up its submit, to
        test the bot's own checks)."""
        who = shown.user_id if user_id is None else user_id
        return await inject.inject_modal_submit(self, shown, who, custom_id, values, forged=forged)
