"""The Discord adapter's lifecycle: log in, connect the gateway, sync ``/count``, report health.

    DiscordAdapter(settings, context)   # as every adapter, through its plug-in

Entering logs in over REST (the client delivery and the command sync use), asks Discord for the
gateway's facts (``GET /gateway/bot``: the recommended shard count, ``max_concurrency``), starts
the gateway sessions of the shards this instance runs (``adapters.discord.shards``; which ones:
``bot.cluster.shards``), waits until they are ready (a clear ``DiscordStartError`` when one is
not, within ``ready_timeout``) and syncs the ``/count`` command to the configured guilds
(instant) or globally (Discord takes up to an hour to show new global commands); a round every
third of ``[cluster] shard_lease_seconds`` (from the first one on: the leases are renewed while
the sessions come up) then keeps the shards divided. Leaving first hands the shards' leases on,
each session answering commands until its new holder's is up (``ShardLeases.hand_over_all``),
then finishes the commands being answered, stops the shards and closes the client.
``api_base`` and ``gateway_url`` are applied to discord.py's ``Route.BASE`` and
``DiscordWebSocket.DEFAULT_GATEWAY`` (process-wide class attributes: one Discord adapter per
process) and restored on leaving. ``health()`` says whether the gateway is
connected now (it is not while discord.py reconnects), shard by shard.

Delivery (called by the dispatcher, which owns pacing and retries) is the adapter's base,
``adapters.discord.delivery.DiscordSender``. Commands: ``adapters.discord.tree`` (the command
tree) and ``adapters.discord.commands`` (carrying them out); who is an admin:
``adapters.discord.admins``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import aiohttp
import yarl

from adapters.discord.admins import DiscordAdmins
from adapters.discord.commands import SlashCommands
from adapters.discord.delivery import DISCORD_LIMITS, FAILURES, DiscordSender
from adapters.discord.gateway import HEARTBEAT_INTERVAL_S, heartbeat_timeout
from adapters.discord.lib import discord
from adapters.discord.members import Members
from adapters.discord.mentions import NO_MENTIONS
from adapters.discord.retries import without_retries
from adapters.discord.settings import TOKEN, DiscordSettings
from adapters.discord.shards import GatewayShards
from adapters.discord.tree import TallybotClient, commands, intents
from bot.platform import (
    IDENTIFY_WINDOW,
    ChannelRef,
    ConfigError,
    Context,
    Health,
    Instance,
    OutsideShare,
    SessionStarts,
    ShardLeases,
    SystemClock,
    TallybotError,
    Window,
    shared,
)

log = logging.getLogger(__name__)


MAX_RATELIMIT_TIMEOUT = 30.0
"""discord.py would sleep through a 429 up to this long (30 s is the smallest it accepts); it
sleeps through none, since every 429 is raised to the bot (``adapters.discord.retries``)."""


class DiscordStartError(TallybotError):
    """The Discord adapter could not start: no gateway, not ready in time, commands refused."""


class DiscordAdapter(DiscordSender):
    """Discord for tallybot: the delivery half (``DiscordSender``), the lifecycle, the commands."""

    def __init__(
        self,
        settings: DiscordSettings,
        context: Context,
        *,
        client_options: Mapping[str, Any] | None = None,
        ready_timeout: float = 60.0,
        identify_window: Window = IDENTIFY_WINDOW,
        heartbeat_interval_s: float = HEARTBEAT_INTERVAL_S,
    ) -> None:
        """``client_options`` go to ``discord.Client`` as they are (tests pass e.g. a short
        ``guild_ready_timeout``); ``ready_timeout`` bounds the wait for the gateway's READY;
        ``identify_window``: one session start per bucket in it (Discord's 5 s; tests shorten
        it, with a fake whose limit they shorten alike); ``heartbeat_interval_s``: the gateway's
        heartbeat interval, which a connection is given up a little past without an ACK
        (Discord's; tests shorten it with the fake's)."""
        super().__init__(DISCORD_LIMITS.with_windows(settings.limits))
        self.config = settings
        self.context = context
        self.members = Members(lambda: context.clock.monotonic())
        self.commands = SlashCommands(context, self.replies, settings.announcements)
        self.admins = DiscordAdmins(settings)
        self._token = context.secret(TOKEN)
        self.budget_key = self._token.fingerprint()
        self._client_options = dict(client_options or {})
        self._options: dict[str, Any] = {}
        self.ready_timeout = ready_timeout
        self.identify_window = identify_window
        self.heartbeat_interval_s = heartbeat_interval_s
        self._client: TallybotClient | None = None
        self.shards: GatewayShards | None = None
        """The gateway sessions of the shards this instance runs (while open)."""
        self.leases: ShardLeases | None = None
        """Which shards those are (while open)."""
        self.starts: SessionStarts | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._ending: set[asyncio.Task[None]] = set()
        """Sessions handed over, ending once their last commands are answered."""
        self._saved_endpoints: tuple[str, yarl.URL] | None = None
        self._applied_endpoints: tuple[str, yarl.URL] | None = None

    def open_client(self) -> TallybotClient | None:
        return self._client

    @property
    def client(self) -> TallybotClient:
        """The discord.py client that talks REST: delivery, the command sync (while open)."""
        if self._client is None:
            raise RuntimeError("the Discord adapter is not open")
        return self._client

    def gateway_client(self, guild_id: int) -> TallybotClient:
        """The client of the shard that carries ``guild_id``'s events, when it runs here."""
        found = self.shards.client_of(guild_id) if self.shards is not None else None
        if found is None:
            raise RuntimeError(f"the shard of guild {guild_id} does not run in this instance")
        return found

    def removed_from(self, channel: ChannelRef) -> bool:
        if not channel.workspace.isdigit():
            return False
        guild_id = int(channel.workspace)
        client = self.shards.client_of(guild_id) if self.shards is not None else None
        return client is not None and client.is_ready() and client.get_guild(guild_id) is None

    def cached_channel(self, channel_id: int) -> object | None:
        for client in self.shards.clients.values() if self.shards is not None else ():
            found = client.get_channel(channel_id)
            if found is not None:
                return found
        return None

    # ------------------------------------------------------------------ lifecycle

    async def aopen(self) -> None:
        self._point_at(self.config)
        self._options = {
            "intents": intents(),
            "heartbeat_timeout": heartbeat_timeout(self.heartbeat_interval_s),
            "max_ratelimit_timeout": MAX_RATELIMIT_TIMEOUT,
            "allowed_mentions": NO_MENTIONS,
            "chunk_guilds_at_startup": False,
            # discord.py keeps the last 1,000 messages it saw, the bot's own posts included, for
            # events the bot does not handle: a fan-out would fill it with its own posts.
            "max_messages": None,
            # discord.py retries nothing by itself: the dispatcher does (adapters.discord.retries)
            "http_trace": self.http_trace(),
            **self._client_options,
        }
        store = self.context.store
        if store is not None and shared(store):  # other instances may send
            share = OutsideShare(store, self.platform, self, SystemClock(), asyncio.sleep)
            self.global_429s.outside = share.turn
        client = self._client = self._new_client()
        try:
            await self._login(client)
            count, concurrency = await self._gateway_facts(client)
            await self._start_shards(count, concurrency)
            await self._sync_commands(client)
        except BaseException:
            await self._shutdown()
            raise
        log.info(
            "Discord: logged in as %s; shards %s of %d run here; /count synced to %s",
            client.user,
            ", ".join(map(str, sorted(self.shards.clients))) if self.shards else "none",
            count,
            ", ".join(map(str, self.config.guilds)) or "all servers (global)",
        )

    def http_trace(self) -> aiohttp.TraceConfig:
        """What discord.py's session runs for each request: the global limit's watch (its
        429s, the requests outside the pacer, each answer's arrival:
        ``adapters.discord.ratelimits``), then the answers discord.py would retry, raised
        (``adapters.discord.retries``)."""
        return without_retries(self.global_429s.trace())

    def _new_client(self, shard: int | None = None, count: int | None = None) -> TallybotClient:
        sharding: dict[str, Any] = {}
        identify = None
        if shard is not None:
            sharding = {"shard_id": shard, "shard_count": count}
            identify = self.starts.turn if self.starts is not None else None
        client = TallybotClient(
            self.commands, self.remember_channel_name, identify, **self._options, **sharding
        )
        for command in commands(self.commands, list(self.config.guilds) or None):
            client.tree.add_command(command)
        return client

    async def _gateway_facts(self, client: TallybotClient) -> tuple[int, int]:
        """The shard count (configured, or Discord's recommendation) and ``max_concurrency``."""
        try:
            shards, _, limits = await client.http.get_bot_gateway()
        except FAILURES as exc:
            raise DiscordStartError(
                f"cannot ask Discord at {self.config.api_base} for the gateway: {exc}"
            ) from exc
        count = self.config.shard_count or int(shards)
        if self.config.shard_ids and max(self.config.shard_ids) >= count:
            raise ConfigError(
                f"[discord] shard_ids {list(self.config.shard_ids)}: the bot has {count} shards "
                f"(numbered 0 to {count - 1})"
            )
        return count, int(limits.get("max_concurrency", 1))

    async def _start_shards(self, count: int, concurrency: int) -> None:
        """Take this instance's shards, start them and wait until they are ready; then keep
        them divided, a round at a time."""
        store, instance = self.context.store, self.context.instance or Instance()
        starts = self.starts = SessionStarts(
            "discord", concurrency, SystemClock(), store, window=self.identify_window
        )
        self.leases = ShardLeases(
            store,
            self.context.clock,
            instance,
            count=count,
            fixed=self.config.shard_ids,
            lease_seconds=self.context.shard_lease_seconds,
        )
        leases = self.leases
        shards = self.shards = GatewayShards(
            lambda n: self._new_client(n, count), self._token.reveal(), count, starts.turn
        )
        leases.up = shards.up
        shards.came_up = lambda shard: leases.wake()
        await leases.step(shards.start, self._retire, self._retire)
        # rounds from now on: the leases must not lapse while the sessions come up
        self._keeper = asyncio.create_task(
            leases.run(shards.start, self._retire, self._retire), name="discord-shard-leases"
        )
        for shard in sorted(shards.clients):
            client, task = shards.clients.get(shard), shards.tasks.get(shard)
            if client is not None and task is not None:  # not handed over meanwhile
                await self._wait_ready(client, task)
        leases.publish()
        self.admins.warn_about(
            (
                (str(g.id), [str(r.id) for r in g.roles] + [r.name for r in g.roles])
                for client in shards.clients.values()
                for g in client.guilds
            ),
            covers=lambda guild: guild.isdigit() and shards.client_of(int(guild)) is not None,
        )

    async def _retire(self, shard: int) -> None:
        """The shard's new holder has its session up, or another instance holds its lease now:
        this session takes no more commands, and ends once those it is answering are answered
        (in the background: rounds go on), never under a command being answered."""
        assert self.shards is not None
        client, task = self.shards.retire(shard)
        if client is not None:
            client.taking_commands = False
        shards = self.shards

        async def end() -> None:
            await self.commands.inflight.settled()
            await shards.close(client, task)

        ending = asyncio.create_task(end(), name=f"discord-shard-{shard}-handed-over")
        self._ending.add(ending)
        ending.add_done_callback(self._ending.discard)

    async def finish_commands(self) -> None:
        """A stop: the shards handed over first, their sessions answering commands until the new
        holders' are up; then the commands being answered are finished."""
        await self._hand_over()
        await self.commands.finish()

    async def _hand_over(self) -> None:
        """No more rounds; every shard handed on, its session serving until its new holder's
        is up (``ShardLeases.hand_over_all``)."""
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        if self.shards is not None and self.leases is not None:
            await self.leases.hand_over_all(self._retire)

    async def aclose(self) -> None:
        await self._shutdown()

    async def health(self) -> Health:
        """Up while the client is open and every shard run here is connected and ready."""
        client = self._client
        if client is None or client.is_closed() or self.shards is None:
            return Health.down("the Discord client is closed")
        keeper = self._keeper
        if keeper is not None and keeper.done() and not keeper.cancelled():
            return Health.down(f"the Discord shards are no longer kept: {keeper.exception()!r}")
        return self.shards.health()

    def _point_at(self, config: DiscordSettings) -> None:
        """Send discord.py's REST and gateway traffic where the configuration says."""
        base = config.api_base.rstrip("/")
        gateway = yarl.URL(config.gateway_url)
        if not gateway.path:
            gateway = gateway.with_path("/")
        self._saved_endpoints = (
            discord.http.Route.BASE,
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY,
        )
        discord.http.Route.BASE = base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway
        self._applied_endpoints = (base, gateway)

    def _restore_endpoints(self) -> None:
        if self._saved_endpoints is None or self._applied_endpoints is None:
            return
        (old_base, old_gateway), (base, gateway) = self._saved_endpoints, self._applied_endpoints
        if base == discord.http.Route.BASE:  # unless someone changed them since
            discord.http.Route.BASE = old_base
        if gateway == discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway
        self._saved_endpoints = self._applied_endpoints = None

    async def _login(self, client: TallybotClient) -> None:
        try:
            await client.login(self._token.reveal())
        except discord.LoginFailure as exc:
            raise ConfigError(
                "DISCORD_TOKEN was refused by Discord: copy the bot's token from the Developer "
                "Portal (Bot > Reset Token) into DISCORD_TOKEN or DISCORD_TOKEN_FILE"
            ) from exc
        except FAILURES as exc:
            raise DiscordStartError(
                f"cannot log in to Discord at {self.config.api_base}: {exc}"
            ) from exc

    async def _wait_ready(self, client: TallybotClient, gateway: asyncio.Task[None]) -> None:
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-ready")
        done, _ = await asyncio.wait(
            {ready, gateway}, timeout=self.ready_timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if ready in done:
            return
        ready.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ready
        if not client.taking_commands:  # handed over (or its lease lost) meanwhile: no failure
            return
        where = self.config.gateway_url
        if gateway in done:
            failure = None if gateway.cancelled() else gateway.exception()
            # discord.py 2.7 fails its own reconnect with an AttributeError when the very first
            # connection failed: name the first failure too.
            cause = f"{failure!r}" if failure is not None else "cancelled"
            if failure is not None and failure.__context__ is not None:
                cause += f" after {failure.__context__!r}"
            raise DiscordStartError(
                f"the Discord gateway at {where} closed before the bot was ready: {cause}"
            ) from failure
        raise DiscordStartError(
            f"the bot did not become ready within {self.ready_timeout:g} s (gateway {where}); "
            "check the network, and gateway_url under [discord]"
        )

    async def _sync_commands(self, client: TallybotClient) -> None:
        targets: list[discord.Object | None] = [discord.Object(g) for g in self.config.guilds]
        for guild in targets or [None]:
            where = f"server {guild.id}" if guild is not None else "all servers"
            try:
                await client.tree.sync(guild=guild)
            except (discord.Forbidden, discord.NotFound) as exc:
                raise DiscordStartError(
                    f"Discord refused the /count command for {where} ({exc.status}, code "
                    f"{exc.code}): is the bot in that server, invited with the "
                    "applications.commands scope?"
                ) from exc
            except FAILURES as exc:
                # The commands synced last time stay registered: carry on without failing.
                log.warning("could not sync /count to %s (%s); using the last sync", where, exc)

    async def _shutdown(self) -> None:
        await self._hand_over()  # done already when the commands were finished (a stop)
        if self._ending:
            await asyncio.wait(set(self._ending))
        await self.commands.finish()
        if self.shards is not None:
            await self.shards.stop_all()
        if self.leases is not None:
            await self.leases.release_all()
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        self._restore_endpoints()
