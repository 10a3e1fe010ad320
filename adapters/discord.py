"""The Discord adapter: ``/count`` slash commands, embeds and a live scoreboard (discord.py 2.7).

    DiscordAdapter(commands, DiscordConfig, token=Secret, admins=Admins)

Entering logs in over REST, connects the gateway in a background task, waits until discord.py
is ready (a clear ``DiscordStartError`` when it is not, within ``ready_timeout``) and syncs the
``/count`` command to the configured guilds (instant) or globally (Discord takes up to an hour
to show new global commands). Leaving waits briefly for commands being answered, then closes the
client and the gateway task. ``api_base`` and ``gateway_url`` are applied to discord.py's
``Route.BASE`` and ``DiscordWebSocket.DEFAULT_GATEWAY`` (process-wide class attributes: one
Discord adapter per process) and restored on leaving.

Delivery (called by ``bot.delivery.worker``, which owns pacing and retries) is the adapter's base,
``adapters.discord_delivery.DiscordSender``: posts with a nonce and the delivery key in the
footer, finding earlier posts in the channel, live-scoreboard edits, error translation, and
``DISCORD_LIMITS``.

Commands: one ``/count`` group whose subcommands build the same text grammar as every other
platform (``bot.commands.parse``) and call ``Commands.handle``. Each interaction is acknowledged
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
import logging
import re
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import yarl

with warnings.catch_warnings():
    # discord.player imports audioop, deprecated since Python 3.11.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord
    import discord.gateway
    import discord.http
    from discord import app_commands

from adapters.discord_delivery import (
    DISCORD_LIMITS,
    FAILURES,
    NO_MENTIONS,
    DiscordSender,
    discord_file,
)
from adapters.discord_embeds import (
    choice_name,
    escape,
    reply_parts,
)
from bot.commands.handler import Commands
from bot.commands.parse import Verb
from bot.commands.request import Reply, Request
from bot.config import Admins, DiscordConfig
from bot.delivery.pacing import Limits
from bot.errors import (
    CommandError,
    ConfigError,
    TallybotError,
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

MAX_RATELIMIT_TIMEOUT = 30.0
"""discord.py sleeps through a 429 up to this long, and raises ``RateLimited`` beyond it (30 s
is the smallest it accepts); the dispatcher then reschedules the delivery."""
SHUTDOWN_GRACE_S = 5.0
"""How long leaving waits for commands being answered before cancelling them."""
GATEWAY_GRACE_S = 1.0
"""How long leaving waits for the gateway task to end after the client closed (it is cancelled
after that, e.g. while it sleeps before a reconnect)."""
PUBLIC_VERBS = frozenset({Verb.SUBSCRIBE, Verb.STATUS, Verb.CHART})
"""Commands whose answer is shown to the channel; every other answer (and every error) is
ephemeral."""

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
    """The text-grammar line (``bot.commands.parse``) that a slash command's options describe.

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


# ---------------------------------------------------------------------------- adapter


class DiscordAdapter(DiscordSender):
    """Discord for tallybot: the delivery half (``DiscordSender``), the lifecycle, the commands."""

    def __init__(
        self,
        commands: Commands,
        config: DiscordConfig,
        *,
        token: Secret,
        admins: Admins,
        client_options: Mapping[str, Any] | None = None,
        ready_timeout: float = 60.0,
        limits: Limits = DISCORD_LIMITS,
    ) -> None:
        """``client_options`` go to ``discord.Client`` as they are (tests pass e.g. a short
        ``guild_ready_timeout``); ``ready_timeout`` bounds the wait for the gateway's READY."""
        super().__init__(limits)
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
        # The limits (bot.commands.throttle) are counted now, the public reply included: the
        # deferral below must say public or private before the answer is known, and a public
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
