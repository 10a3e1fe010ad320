"""The Discord adapter's lifecycle: log in, connect the gateway, sync ``/count``, report health.

    DiscordAdapter(settings, context)   # as every adapter, through its plug-in

Entering logs in over REST, connects the gateway in a background task, waits until discord.py
is ready (a clear ``DiscordStartError`` when it is not, within ``ready_timeout``) and syncs the
``/count`` command to the configured guilds (instant) or globally (Discord takes up to an hour
to show new global commands). Leaving waits briefly for commands being answered, then closes the
client and the gateway task. ``api_base`` and ``gateway_url`` are applied to discord.py's
``Route.BASE`` and ``DiscordWebSocket.DEFAULT_GATEWAY`` (process-wide class attributes: one
Discord adapter per process) and restored on leaving. ``health()`` says whether the gateway is
connected now (it is not while discord.py reconnects).

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

import yarl

from adapters.discord.admins import DiscordAdmins
from adapters.discord.commands import SlashCommands
from adapters.discord.delivery import DISCORD_LIMITS, FAILURES, DiscordSender
from adapters.discord.lib import discord
from adapters.discord.mentions import NO_MENTIONS
from adapters.discord.settings import TOKEN, DiscordSettings
from adapters.discord.tree import CountGroup, TallybotClient, intents
from bot.errors import ConfigError, TallybotError
from bot.platform import Context, Health

log = logging.getLogger(__name__)


MAX_RATELIMIT_TIMEOUT = 30.0
"""discord.py sleeps through a 429 up to this long, and raises ``RateLimited`` beyond it (30 s
is the smallest it accepts); the dispatcher then reschedules the delivery."""
GATEWAY_GRACE_S = 1.0
"""How long leaving waits for the gateway task to end after the client closed (it is cancelled
after that, e.g. while it sleeps before a reconnect)."""


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
    ) -> None:
        """``client_options`` go to ``discord.Client`` as they are (tests pass e.g. a short
        ``guild_ready_timeout``); ``ready_timeout`` bounds the wait for the gateway's READY."""
        super().__init__(DISCORD_LIMITS.with_windows(settings.limits))
        self.config = settings
        self.context = context
        self.commands = SlashCommands(context)
        self.admins = DiscordAdmins(settings)
        self._token = context.secret(TOKEN)
        self.budget_key = self._token.fingerprint()
        self._client_options = dict(client_options or {})
        self.ready_timeout = ready_timeout
        self._client: TallybotClient | None = None
        self._gateway_task: asyncio.Task[None] | None = None
        self._saved_endpoints: tuple[str, yarl.URL] | None = None
        self._applied_endpoints: tuple[str, yarl.URL] | None = None

    def open_client(self) -> TallybotClient | None:
        return self._client

    @property
    def client(self) -> TallybotClient:
        """The discord.py client (while the adapter is open)."""
        if self._client is None:
            raise RuntimeError("the Discord adapter is not open")
        return self._client

    # ------------------------------------------------------------------ lifecycle

    async def aopen(self) -> None:
        self._point_at(self.config)
        options: dict[str, Any] = {
            "intents": intents(),
            "max_ratelimit_timeout": MAX_RATELIMIT_TIMEOUT,
            "allowed_mentions": NO_MENTIONS,
            "chunk_guilds_at_startup": False,
            # discord.py keeps the last 1,000 messages it saw, the bot's own posts included, for
            # events the bot does not handle: a fan-out would fill it with its own posts.
            "max_messages": None,
            "http_trace": self.global_429s.trace(),
            **self._client_options,
        }
        client = self._client = TallybotClient(self.commands, self.remember_channel_name, **options)
        guild_ids = list(self.config.guilds) or None
        client.tree.add_command(CountGroup(self.commands, guild_ids))
        try:
            await self._login(client)
            self._gateway_task = asyncio.create_task(
                client.connect(reconnect=True), name="discord-gateway"
            )
            await self._wait_ready(client, self._gateway_task)
            self.admins.warn_about(
                (str(g.id), [str(r.id) for r in g.roles] + [r.name for r in g.roles])
                for g in client.guilds
            )
            await self._sync_commands(client)
        except BaseException:
            await self._shutdown()
            raise
        log.info(
            "Discord: logged in as %s in %d servers; /count synced to %s",
            client.user,
            len(client.guilds),
            ", ".join(map(str, self.config.guilds)) or "all servers (global)",
        )

    async def aclose(self) -> None:
        await self._shutdown()

    async def health(self) -> Health:
        """Connected while the gateway's websocket is open and discord.py is ready."""
        client = self._client
        if client is None or client.is_closed():
            return Health.down("the Discord client is closed")
        ws = client.ws
        if ws is None or not ws.open:
            return Health.down("the Discord gateway is disconnected (reconnecting)")
        if not client.is_ready():
            return Health.down("the Discord gateway is connected but not ready")
        return Health()

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
        await self.commands.finish()
        client, self._client = self._client, None
        if client is not None:
            await client.close()
        gateway, self._gateway_task = self._gateway_task, None
        if gateway is not None:
            done, _ = await asyncio.wait({gateway}, timeout=GATEWAY_GRACE_S)
            if not done:
                gateway.cancel()
            try:
                await gateway
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # it failed before (and was reported then) or on closing
                log.debug("the Discord gateway task ended with %r", exc)
        self._restore_endpoints()
