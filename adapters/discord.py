"""The Discord adapter: ``/count`` slash commands, embeds and a live scoreboard (discord.py 2.7).

    DiscordAdapter(commands, DiscordConfig, token=Secret, admins=Admins)

Entering logs in over REST, connects the gateway in a background task, waits until discord.py
is ready (a clear ``DiscordStartError`` when it is not, within ``ready_timeout``) and syncs the
``/count`` command to the configured guilds (instant) or globally (Discord takes up to an hour
to show new global commands). Leaving waits briefly for commands being answered, then closes the
client and the gateway task. ``api_base`` and ``gateway_url`` are applied to discord.py's
``Route.BASE`` and ``DiscordWebSocket.DEFAULT_GATEWAY`` (process-wide class attributes: one
Discord adapter per process) and restored on leaving.

Delivery (called by ``bot.dispatcher``, which owns pacing and retries):

- ``post`` sends one embed (a ``Notice`` as plain content) with ``allowed_mentions`` none and
  ``nonce=key`` (discord.py always adds ``enforce_nonce``), so that a retry of a send whose
  answer was lost is deduplicated by Discord for a few minutes: one message, not two. An
  attachment (the chart of a final tally) goes in the same request, as a file with its alt text
  and shown as the embed's image (``attachment://``), so the nonce covers it too. Refused for it
  (no Attach Files permission, too large), the message is sent again without it.
- ``edit`` edits a live scoreboard without fetching it first (``get_partial_message().edit``).
- Errors are translated where they leave discord.py: 429 (``RateLimited``, raised by
  discord.py instead of sleeping longer than ``max_ratelimit_timeout``), 5xx, timeouts and
  connection errors are ``TransientDeliveryError`` (with ``retry_after`` when Discord said);
  an unknown channel (10003), lost access (50001) or permissions (50013) are
  ``PermanentDeliveryError`` worded for an admin to act on; a scoreboard that is gone (10008)
  or can no longer be edited (30046, 50005) is ``MessageGone``.

Limits reported to the dispatcher (``DISCORD_LIMITS``):

- requests: 50 per second, Discord's documented global limit per bot
  (https://discord.com/developers/docs/topics/rate-limits#global-rate-limit). discord.py does
  not pace itself to it: it only waits out a 429 after the fact.
- channel_posts: 5 per 5 s per channel, the message-create bucket Discord reports in its
  ``X-RateLimit-*`` headers (observed; Discord does not document bucket sizes).
- edits: 5 per 5 s per channel, the message-edit bucket, likewise per channel.

Commands: one ``/count`` group whose subcommands build the same text grammar as every other
platform (``bot.command_parse``) and call ``Commands.handle``. Each interaction is acknowledged
at once (deferred, ephemeral when the answer will be) before any work touches the store, then
answered with a follow-up, which carries the reply's file when it has one (``/count chart``).
Admins are the users configured under ``[admins]``, and, in the servers listed there
(``discord_guilds``), members with Manage Server or Administrator or one of the configured
roles (checked, and refusals audited, by ``bot.commands``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import io
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import aiohttp
import yarl

with warnings.catch_warnings():
    # discord.player imports audioop, deprecated since Python 3.11.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http
    from discord import app_commands

from adapters.discord_embeds import (
    choice_name,
    clip,
    escape,
    message_embed,
    notice_content,
    plain,
    reply_parts,
)
from bot.adapter import Attachment, Limits, Notice, Outgoing, Window
from bot.command_parse import Verb
from bot.commands import Commands, Reply, Request
from bot.config import Admins, DiscordConfig
from bot.errors import (
    CommandError,
    ConfigError,
    DeliveryError,
    MessageGone,
    PermanentDeliveryError,
    TallybotError,
    TransientDeliveryError,
)
from bot.secrets import Secret
from bot.store import counts as count_rows
from bot.subscription import ChannelRef, Platform

log = logging.getLogger(__name__)

# The bot never joins a voice channel: discord.py's warnings that voice support is missing
# ("PyNaCl is not installed", "davey is not installed") on every start are noise. These are
# the switches discord.py itself turns off after warning once.
discord.VoiceClient.warn_nacl = False
discord.VoiceClient.warn_dave = False

DISCORD_LIMITS = Limits(
    requests=Window(50, 1.0),
    channel_posts=Window(5, 5.0),
    edits=Window(5, 5.0),
    edits_per_channel=True,
    # GET /users/@me, GET /oauth2/applications/@me and the command sync (one PUT per guild;
    # more guilds than this only cost a 429 that discord.py waits out).
    startup_requests=4,
)
MAX_RATELIMIT_TIMEOUT = 30.0
"""discord.py sleeps through a 429 up to this long, and raises ``RateLimited`` beyond it (30 s
is the smallest it accepts); the dispatcher then reschedules the delivery."""
MAX_NONCE = 25
MAX_ALT_TEXT = 1024
"""Discord's limit on an attachment's description (its alt text)."""
SHUTDOWN_GRACE_S = 5.0
"""How long leaving waits for commands being answered before cancelling them."""
GATEWAY_GRACE_S = 1.0
"""How long leaving waits for the gateway task to end after the client closed (it is cancelled
after that, e.g. while it sleeps before a reconnect)."""
PUBLIC_VERBS = frozenset({Verb.SUBSCRIBE, Verb.STATUS, Verb.CHART})
"""Commands whose answer is shown to the channel; every other answer (and every error) is
ephemeral."""

# Discord JSON error codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes)
UNKNOWN_CHANNEL = 10003
UNKNOWN_GUILD = 10004
UNKNOWN_MESSAGE = 10008
EDIT_LIMIT_OLD_MESSAGE = 30046
UNAUTHORIZED = 40001
MISSING_ACCESS = 50001
CANNOT_EDIT_OTHERS_MESSAGE = 50005
CANNOT_DM_USER = 50007
MISSING_PERMISSIONS = 50013
INVALID_FORM_BODY = 50035
ENTITY_TOO_LARGE = 40005

FAILURES: tuple[type[BaseException], ...] = (
    discord.DiscordException,
    aiohttp.ClientError,
    OSError,
    TimeoutError,
)
"""What a REST call through discord.py raises when Discord or the network fails."""

NO_MENTIONS = discord.AllowedMentions.none()
FAILED = "Error: tallybot could not do that (an internal error, in the operator's log); try again."

Handler = Callable[[Request], Awaitable[Reply]]


class DiscordStartError(TallybotError):
    """The Discord adapter could not start: no gateway, not ready in time, commands refused."""


# ----------------------------------------------------------------------------- client


class TallybotClient(discord.Client):
    """discord.py's client with the ``/count`` command tree and a way back to the adapter."""

    def __init__(self, adapter: DiscordAdapter, **options: Any) -> None:
        super().__init__(**options)
        self.adapter = adapter
        self.tree: app_commands.CommandTree[TallybotClient] = _Tree(self)

    async def on_guild_channel_delete(self, channel: discord.abc.GuildChannel) -> None:
        # Remembered so that the notice about a deleted channel can still name it.
        self.adapter.remember_channel_name(channel.id, channel.name)


Ix = discord.Interaction[TallybotClient]


class _Tree(app_commands.CommandTree[TallybotClient]):
    async def on_error(self, interaction: Ix, error: app_commands.AppCommandError) -> None:
        # Our callbacks answer their own errors; this is for what fails before them (options
        # discord.py could not convert, a command Discord knows but this version does not).
        log.error("/count failed before it ran: %s", error, exc_info=error)
        await _answer_error(interaction, "Error: that command could not be read; try again.")


async def _answer_error(interaction: Ix, text: str) -> None:
    with contextlib.suppress(*FAILURES):
        if interaction.response.is_done():
            await interaction.followup.send(
                escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
            )
        else:
            await interaction.response.send_message(
                escape(text), ephemeral=True, allowed_mentions=NO_MENTIONS
            )


def intents() -> discord.Intents:
    """Only guilds: channel names for error messages and role names for the admin check.

    No privileged intent (members, presences, message content) is needed: slash commands carry
    the member, their roles and permissions with them."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    return wanted


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class Options:
    """The typed options of one ``/count`` subcommand."""

    count: str | None = None
    mode: str | None = None
    figures: str | None = None
    void: int | None = None
    challenged: int | None = None
    received: int | None = None


def command_text(verb: Verb, options: Options | None = None) -> str:
    """The text-grammar line (``bot.command_parse``) that a slash command's options describe.

    ``/count update count:bessemer-2021 figures:"yes=463 no=1,100" challenged:505`` ->
    ``update bessemer-2021 yes=463 no=1,100 challenged=505``. The grammar then checks it like a
    typed line (unknown choices, figures given twice, nothing given).
    """
    options = options or Options()
    words: list[str] = [verb.value]
    if options.count is not None:
        count = options.count.strip()
        if not count or any(ch.isspace() for ch in count):
            raise CommandError(
                f"{options.count!r} is not a count name (they have no spaces): "
                "pick one from the list that appears as you type"
            )
        words.append(count)
    if options.mode is not None:
        words.append(options.mode)
    if options.figures is not None:
        text = re.sub(r"\s*=\s*", "=", options.figures)  # "yes = 463" -> "yes=463"
        text = re.sub(r"[;]|,(?=\s)", " ", text)  # "yes=463, no=1,100" -> "yes=463  no=1,100"
        words.extend(text.split())
    for name in ("void", "challenged", "received"):
        value = getattr(options, name)
        if value is not None:
            words.append(f"{name}={value}")
    return " ".join(words)


async def _count_autocomplete(interaction: Ix, current: str) -> list[app_commands.Choice[str]]:
    return await interaction.client.adapter.count_choices(current)


MODE_CHOICES = [
    app_commands.Choice(name="significant events only (default)", value="events"),
    app_commands.Choice(name="every change", value="all"),
    app_commands.Choice(name="a live scoreboard, plus significant events", value="live"),
]
FIGURES_HELP = "Figures per choice as name=number, e.g. yes=463 no=1100"
Figure = app_commands.Range[int, 0]


class CountGroup(app_commands.Group):
    """``/count``: every subcommand maps onto the text grammar and ``Commands.handle``."""

    def __init__(self, adapter: DiscordAdapter, guild_ids: list[int] | None) -> None:
        super().__init__(
            name="count",
            description="Live vote counts: follow a count here, see where it stands",
            guild_ids=guild_ids,
            guild_only=True,
        )
        self.adapter = adapter

    @app_commands.command(description="Post a count's updates in this channel")
    @app_commands.describe(
        count="The count (start typing to search)", mode="What to post (default: events)"
    )
    @app_commands.choices(mode=MODE_CHOICES)
    @app_commands.autocomplete(count=_count_autocomplete)
    async def subscribe(
        self, interaction: Ix, count: str, mode: app_commands.Choice[str] | None = None
    ) -> None:
        options = Options(count=count, mode=mode.value if mode is not None else None)
        await self.adapter.run(interaction, Verb.SUBSCRIBE, options)

    @app_commands.command(description="Stop posting a count's updates in this channel")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def unsubscribe(self, interaction: Ix, count: str) -> None:
        await self.adapter.run(interaction, Verb.UNSUBSCRIBE, Options(count=count))

    @app_commands.command(name="list", description="Every count, and what this channel follows")
    async def list_(self, interaction: Ix) -> None:
        await self.adapter.run(interaction, Verb.LIST, Options())

    @app_commands.command(description="Where a count stands now")
    @app_commands.describe(count="The count (optional when this channel follows just one)")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def status(self, interaction: Ix, count: str | None = None) -> None:
        await self.adapter.run(interaction, Verb.STATUS, Options(count=count))

    @app_commands.command(description="A count's last updates")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def history(self, interaction: Ix, count: str) -> None:
        await self.adapter.run(interaction, Verb.HISTORY, Options(count=count))

    @app_commands.command(description="A count so far, as a picture")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def chart(self, interaction: Ix, count: str) -> None:
        await self.adapter.run(interaction, Verb.CHART, Options(count=count))

    @app_commands.command(description="What tallybot can do")
    async def help(self, interaction: Ix) -> None:
        await self.adapter.run(interaction, Verb.HELP, Options())

    @app_commands.command(description="Admins: enter new figures for a count")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def update(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.adapter.run(interaction, Verb.UPDATE, options)

    @app_commands.command(description="Admins: correct figures (that go down, or of a final)")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def correct(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.adapter.run(interaction, Verb.CORRECT, options)

    @app_commands.command(description="Admins: the count is paused")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def pause(self, interaction: Ix, count: str) -> None:
        await self.adapter.run(interaction, Verb.PAUSE, Options(count=count))

    @app_commands.command(description="Admins: the count goes on")
    @app_commands.describe(count="The count")
    @app_commands.autocomplete(count=_count_autocomplete)
    async def resume(self, interaction: Ix, count: str) -> None:
        await self.adapter.run(interaction, Verb.RESUME, Options(count=count))

    @app_commands.command(description="Admins: the count is final (optionally with figures)")
    @app_commands.describe(
        count="The count",
        figures=FIGURES_HELP,
        void="Void ballots",
        challenged="Challenged ballots",
        received="Ballots received in all",
    )
    @app_commands.autocomplete(count=_count_autocomplete)
    async def final(
        self,
        interaction: Ix,
        count: str,
        figures: str | None = None,
        void: Figure | None = None,
        challenged: Figure | None = None,
        received: Figure | None = None,
    ) -> None:
        options = Options(count, None, figures, void, challenged, received)
        await self.adapter.run(interaction, Verb.FINAL, options)

    @app_commands.command(description="Admins: messages that could not be delivered")
    async def deliveries(self, interaction: Ix) -> None:
        await self.adapter.run(interaction, Verb.DELIVERIES, Options())


def file_name(name: str) -> str:
    """``name`` as Discord keeps an attachment's name (and ``attachment://`` finds it): letters,
    digits, ``.``, ``_`` and ``-``; anything else becomes ``_``."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", name.rsplit("/", 1)[-1])
    return safe.lstrip(".") or "file"


def discord_file(attachment: Attachment) -> discord.File:
    """A fresh ``discord.File`` (one is consumed by the request that sends it), with its alt
    text."""
    return discord.File(
        io.BytesIO(attachment.data),
        filename=file_name(attachment.filename),
        description=clip(plain(attachment.description), MAX_ALT_TEXT) or None,
    )


def nonce_for(key: str) -> str:
    """Discord takes nonces of up to 25 characters; longer keys are hashed (still stable)."""
    if len(key) <= MAX_NONCE:
        return key
    return "tb" + hashlib.sha256(key.encode()).hexdigest()[: MAX_NONCE - 2]


# ---------------------------------------------------------------------------- adapter


class DiscordAdapter:
    platform = Platform.DISCORD
    limits = DISCORD_LIMITS

    def __init__(
        self,
        commands: Commands,
        config: DiscordConfig,
        *,
        token: Secret,
        admins: Admins,
        client_options: Mapping[str, Any] | None = None,
        ready_timeout: float = 60.0,
    ) -> None:
        """``client_options`` go to ``discord.Client`` as they are (tests pass e.g. a short
        ``guild_ready_timeout``); ``ready_timeout`` bounds the wait for the gateway's READY."""
        self.commands = commands
        self._handle: Handler = commands.handle
        self.config = config
        self.admins = admins
        self._token = token
        self._client_options = dict(client_options or {})
        self.ready_timeout = ready_timeout
        self._client: TallybotClient | None = None
        self._gateway_task: asyncio.Task[None] | None = None
        self._inflight: set[asyncio.Task[Any]] = set()
        self._names: dict[int, str] = {}
        self._saved_endpoints: tuple[str, yarl.URL] | None = None
        self._applied_endpoints: tuple[str, yarl.URL] | None = None

    @property
    def client(self) -> TallybotClient:
        """The discord.py client (while the adapter is open)."""
        if self._client is None:
            raise RuntimeError("the Discord adapter is not open")
        return self._client

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Self:
        self._point_at(self.config)
        options: dict[str, Any] = {
            "intents": intents(),
            "max_ratelimit_timeout": MAX_RATELIMIT_TIMEOUT,
            "allowed_mentions": NO_MENTIONS,
            "chunk_guilds_at_startup": False,
            **self._client_options,
        }
        client = self._client = TallybotClient(self, **options)
        guild_ids = list(self.config.guilds) or None
        client.tree.add_command(CountGroup(self, guild_ids))
        try:
            await self._login(client)
            self._gateway_task = asyncio.create_task(
                client.connect(reconnect=True), name="discord-gateway"
            )
            await self._wait_ready(client, self._gateway_task)
            self._check_admin_roles(client)
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
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._shutdown()

    def _point_at(self, config: DiscordConfig) -> None:
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

    def _check_admin_roles(self, client: TallybotClient) -> None:
        """Warn about admin settings that make nobody an admin: no server listed under
        ``discord_guilds`` (only ``discord_users`` are admins then), a listed server the bot is
        not in, a configured role that no listed server has (a typo?)."""
        listed = self.admins.discord_guilds
        if not listed:
            log.warning(
                "admins.discord_guilds lists no server: Manage Server and admin roles make "
                "nobody an admin, only admins.discord_users are"
            )
        guilds = [g for g in client.guilds if str(g.id) in listed]
        for missing in sorted(listed - {str(g.id) for g in guilds}):
            log.warning("admins.discord_guilds: the bot is not in server %s", missing)
        known = {str(r.id) for g in guilds for r in g.roles} | {
            r.name for g in guilds for r in g.roles
        }
        for role in sorted(self.admins.discord_roles - known):
            log.warning(
                "admins.discord_roles: no server in admins.discord_guilds has a role %r", role
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
        current = asyncio.current_task()
        inflight = [t for t in self._inflight if t is not current and not t.done()]
        if inflight:  # let commands being answered finish, briefly
            _, pending = await asyncio.wait(inflight, timeout=SHUTDOWN_GRACE_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
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

    # ------------------------------------------------------------------- delivery

    def _target(self, channel: ChannelRef) -> discord.PartialMessageable:
        try:
            channel_id = int(channel.channel)
        except ValueError:
            raise PermanentDeliveryError(
                f"{channel}: {channel.channel!r} is not a Discord channel id"
            ) from None
        guild_id = int(channel.workspace) if channel.workspace.isdigit() else None
        return self.client.get_partial_messageable(
            channel_id, guild_id=guild_id, type=discord.ChannelType.text
        )

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        maybe_sent: bool = False,
        attachment: Attachment | None = None,
    ) -> str:
        """Send one message; ``key`` is the nonce, so a retry is deduplicated by Discord.

        ``maybe_sent`` needs nothing more here: the same nonce makes Discord return the message
        an earlier attempt created (for a few minutes after it), with its attachment: the file
        goes in the same request as the message, so it cannot be sent twice either."""
        target = self._target(channel)
        nonce = nonce_for(key)
        if attachment is not None:
            try:
                return await self._send(target, content, nonce, attachment)
            except discord.HTTPException as exc:
                if not _refused_for_the_file(exc):
                    raise self.translate(exc, channel) from exc
                log.warning(
                    "%s: sending the message without its %s (%s); the bot needs Attach Files "
                    "there to show it",
                    self.describe(channel), attachment.filename, exc,
                )  # fmt: skip
            except FAILURES as exc:
                raise self.translate(exc, channel) from exc
        try:
            return await self._send(target, content, nonce, None)
        except FAILURES as exc:
            raise self.translate(exc, channel) from exc

    async def _send(
        self,
        target: discord.PartialMessageable,
        content: Outgoing,
        nonce: str,
        attachment: Attachment | None,
    ) -> str:
        extra: dict[str, Any] = {}
        if attachment is not None:
            extra["file"] = discord_file(attachment)
        if isinstance(content, Notice):
            sent = await target.send(
                notice_content(content), allowed_mentions=NO_MENTIONS, nonce=nonce, **extra
            )
        else:
            embed = message_embed(content)
            if attachment is not None:  # the chart inside the message's card, under the figures
                embed.set_image(url=f"attachment://{extra['file'].filename}")
            sent = await target.send(
                embed=embed, allowed_mentions=NO_MENTIONS, nonce=nonce, **extra
            )
        return str(sent.id)

    async def edit(self, channel: ChannelRef, message_id: str, content: Outgoing) -> None:
        """Replace a message posted before (a live scoreboard), without fetching it."""
        target = self._target(channel)
        try:
            message = target.get_partial_message(int(message_id))
        except ValueError:
            raise MessageGone(f"{channel}: {message_id!r} is not a Discord message id") from None
        try:
            if isinstance(content, Notice):
                await message.edit(
                    content=notice_content(content), embed=None, allowed_mentions=NO_MENTIONS
                )
            else:
                await message.edit(embed=message_embed(content), allowed_mentions=NO_MENTIONS)
        except FAILURES as exc:
            raise self.translate(exc, channel, editing=True) from exc

    def translate(
        self, exc: BaseException, channel: ChannelRef, *, editing: bool = False
    ) -> DeliveryError:
        """What a discord.py or network failure means for the dispatcher."""
        where = self.describe(channel)
        if isinstance(exc, discord.RateLimited):
            return TransientDeliveryError(
                f"{where}: rate limited by Discord for {exc.retry_after:.1f} s",
                retry_after=exc.retry_after,
            )
        if isinstance(exc, discord.HTTPException):
            status, code = exc.status, exc.code
            said = f"Discord answered {status}" + (f" (code {code})" if code else "")
            if status == 429:
                return TransientDeliveryError(
                    f"{where}: rate limited; {said}", retry_after=_retry_after(exc)
                )
            if status >= 500 or status == 408:
                return TransientDeliveryError(f"{where}: Discord failed; {said}")
            if status == 401 or code == UNAUTHORIZED:
                # The token, not the channel: do not disable the subscription over it.
                return TransientDeliveryError(
                    f"Discord refused the bot's token ({said}): check DISCORD_TOKEN",
                    retry_after=60.0,
                )
            if editing and code in (
                UNKNOWN_MESSAGE,
                EDIT_LIMIT_OLD_MESSAGE,
                CANNOT_EDIT_OTHERS_MESSAGE,
            ):
                return MessageGone(f"{where}: the message can no longer be edited; {said}")
            if code == UNKNOWN_CHANNEL:
                return PermanentDeliveryError(
                    f"{where} no longer exists (deleted?); {said}. Subscribe another channel"
                )
            if code == UNKNOWN_GUILD:
                return PermanentDeliveryError(
                    f"the bot is no longer in the server of {where}; {said}"
                )
            if code in (MISSING_ACCESS, MISSING_PERMISSIONS) or status == 403:
                return PermanentDeliveryError(
                    f"the bot lost access to {where}: give it View Channel, Send Messages and "
                    f"Embed Links there; {said}"
                )
            if code == INVALID_FORM_BODY:
                return PermanentDeliveryError(
                    f"{where}: Discord refused the message as invalid; {said}: {exc.text}"
                )
            return PermanentDeliveryError(f"{where}: Discord refused the message; {said}")
        if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
            return TransientDeliveryError(f"{where}: cannot reach Discord: {exc!r}")
        return TransientDeliveryError(f"{where}: {exc!r}")

    def remember_channel_name(self, channel_id: int, name: str) -> None:
        self._names[channel_id] = name

    def describe(self, channel: ChannelRef) -> str:
        """``#name (server)`` when discord.py's cache knows the channel, else its id."""
        try:
            channel_id = int(channel.channel)
        except ValueError:
            return str(channel)
        found = self._client.get_channel(channel_id) if self._client is not None else None
        name = getattr(found, "name", None) or self._names.get(channel_id)
        if not name:
            return f"channel {channel_id}"
        guild = getattr(found, "guild", None)
        return f"#{name}" + (f" ({guild.name})" if guild is not None else "")

    # ------------------------------------------------------------------- commands

    async def run(self, interaction: Ix, verb: Verb, options: Options) -> None:
        """Carry out one ``/count`` subcommand and answer it (never raises)."""
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            await self._run(interaction, verb, options)
        except Exception:  # every command gets an answer, whatever went wrong
            log.exception("/count %s failed", verb)
            await _answer_error(interaction, FAILED)
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _run(self, interaction: Ix, verb: Verb, options: Options) -> None:
        try:
            text = command_text(verb, options)
        except CommandError as exc:
            await _answer_error(interaction, f"Error: {exc}")
            return
        # The limits (bot.throttle) are counted now, the public reply included: the deferral
        # below must say public or private before the answer is known, and a public
        # "thinking…" taken back would still have shown in the channel.
        request = self.request_for(interaction, text)
        ticket = self.commands.throttle.check(
            request.channel, request.user_id, public=verb in PUBLIC_VERBS
        )
        request = dataclasses.replace(request, passed=ticket)
        if verb is Verb.HELP:  # touches no store: answer at once
            try:
                await self._answer_now(interaction, await self._handle(request))
            except FAILURES as exc:
                log.warning("could not answer /count help: %s", exc)
            return
        public = ticket.public
        try:
            await interaction.response.defer(ephemeral=not public, thinking=True)
        except FAILURES as exc:
            # Too late (10062) or already answered: the user saw an error; do not act on it.
            log.warning("could not acknowledge /count %s in time (%s): not carried out", verb, exc)
            return
        try:
            reply = await self._handle(request)
        except Exception:
            log.exception("/count %s failed", verb)
            reply = Reply(FAILED, ok=False)
        try:
            await self._follow_up(interaction, reply, deferred_public=public)
        except FAILURES as exc:
            log.warning("could not answer /count %s: %s", verb, exc)

    def request_for(self, interaction: Ix, text: str) -> Request:
        user = interaction.user
        roles: frozenset[str] = frozenset()
        if isinstance(user, discord.Member):
            named = [r for r in user.roles if not r.is_default()]
            roles = frozenset([str(r.id) for r in named] + [r.name for r in named])
        perms = interaction.permissions
        workspace = str(interaction.guild_id) if interaction.guild_id is not None else "@me"
        return Request(
            channel=ChannelRef(Platform.DISCORD, workspace, str(interaction.channel_id)),
            user_id=str(user.id),
            user_name=user.name,
            text=text,
            platform_admin=perms.manage_guild or perms.administrator,
            roles=roles,
        )

    async def _answer_now(self, interaction: Ix, reply: Reply) -> None:
        content, embed = reply_parts(reply)
        send = interaction.response.send_message
        if embed is None:
            await send(content, ephemeral=reply.ephemeral, allowed_mentions=NO_MENTIONS)
        else:
            await send(
                content, embed=embed, ephemeral=reply.ephemeral, allowed_mentions=NO_MENTIONS
            )

    async def _follow_up(self, interaction: Ix, reply: Reply, *, deferred_public: bool) -> None:
        ephemeral = not deferred_public
        if deferred_public and reply.ephemeral:
            # The "thinking…" placeholder is public, the answer (an error) is not: take the
            # placeholder back and answer privately.
            with contextlib.suppress(*FAILURES):
                await interaction.delete_original_response()
            ephemeral = True
        content, embed = reply_parts(reply)
        followup = interaction.followup
        extra: dict[str, Any] = {}
        if reply.attachment is not None:  # the chart, shown under the text with its alt text
            extra["file"] = discord_file(reply.attachment)
        if embed is None:
            await followup.send(
                content or "…", ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )
        elif content is None:
            await followup.send(
                embed=embed, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )
        else:
            await followup.send(
                content, embed=embed, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS, **extra
            )

    async def count_choices(self, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete for a count option: ids and titles containing what was typed."""
        try:
            async with self.commands.db.connect() as conn:
                counts = await count_rows.all_counts(conn)
        except Exception:
            log.exception("autocomplete: could not read the counts")
            return []
        typed = current.strip().lower()
        found = [c for c in counts if typed in c.id.lower() or typed in c.title.lower()]
        found.sort(key=lambda c: (not c.id.lower().startswith(typed), c.id))
        return [
            app_commands.Choice(name=choice_name(f"{c.id} — {c.title}", 100), value=c.id)
            for c in found[:25]
        ]


def _refused_for_the_file(exc: discord.HTTPException) -> bool:
    """Discord refused a message because of its file: no Attach Files permission (403, 50013;
    also what it says without Send Messages, and then the retry without the file fails too),
    or too large (413, 40005)."""
    return (exc.status == 403 and exc.code == MISSING_PERMISSIONS) or (
        exc.status == 413 or exc.code == ENTITY_TOO_LARGE
    )


def _retry_after(exc: discord.HTTPException) -> float | None:
    headers = getattr(exc.response, "headers", None)
    raw = headers.get("Retry-After") if headers is not None else None
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None
