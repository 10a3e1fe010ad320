"""The Slack adapter: Block Kit posts and live-scoreboard edits, ``/count`` and ``@tallybot``.

Built on slack-bolt's ``AsyncApp`` and slack_sdk's ``AsyncWebClient``. Socket Mode by default
(``SLACK_APP_TOKEN``, no public URL); HTTP mode as an option (an aiohttp app that verifies
request signatures and refuses stale timestamps, through bolt, with ``SLACK_SIGNING_SECRET``).

Delivery. The dispatcher owns pacing and retries: every request of a delivery goes through the
``pace`` it is given, named by its Web API method (``SLACK_LIMITS`` says which buckets each
draws from: Slack's limits are per method per workspace, and chat.postMessage per channel too).
Every failure becomes ``RateLimited`` (429, with its Retry-After), ``TransientDeliveryError``
(5xx, timeouts, dropped connections), ``PermanentDeliveryError`` (channel gone or archived,
bot not invited, token or scopes refused, a payload Slack rejects) or ``MessageGone`` (the
scoreboard to edit was deleted). The web client has no retry handlers: slack_sdk's default one
resends a request whose answer was lost, which doubles a chat.postMessage.

Exactly once. Slack has no idempotency key, so every post carries its delivery key in the
message metadata (``event_type`` ``tallybot_delivery``). When earlier attempts may have gone
through, the dispatcher first asks ``find_posted``: one conversations.history read of the
channel's latest ``history_limit`` messages (``include_all_metadata``) finds every key asked
for; a found message is not posted again: record-then-confirm. (conversations.history is Tier
3 for internal and Marketplace apps; since 2025 Slack limits it much further for commercially
distributed apps outside the Marketplace, which tallybot, installed by each organisation
itself, is not.)

Charts. A post with an attachment (the chart of a final tally) is the message as above, then
the PNG uploaded into the same channel (files.getUploadURLExternal, the upload, then
files.completeUploadExternal, each paced under its own method's budget; needs
``files:write``), in the message's thread (``thread_ts``) so that it stays with the result it
shows, whatever else the channel gets meanwhile. Both are one delivery: a transient failure of
the upload fails the delivery, which the dispatcher retries; a permanent one (the scope
missing) only leaves the chart out, logged, since the message is out. A retry does not upload
the chart twice: the same conversations.history answer that finds the earlier message says
who replied in its thread (``reply_users``). The bot replies in the thread of its own delivery
only with the chart, so if the bot is among them the chart is there already; if not, it is
uploaded now. (Slack shares a completed upload a moment after answering; a retry in that
moment could miss it and show a second copy, in the thread, never a second message. The
dispatcher's backoff, a second or more, makes that unlikely.)

Many workspaces: with ``[slack] client_id`` the OAuth install flow is on (``adapters.slack.oauth``)
and each workspace is served with its own bot token (``adapters.slack.workspaces``).

Commands: ``adapters.slack.commands``; who is an admin: ``adapters.slack.admins``. ``health()``
says whether the Socket Mode connection is up (HTTP mode has none: always connected).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.commands import PLATFORM, SlackCommands, log
from adapters.slack.delivery import translate
from adapters.slack.forms import CALLBACK_PREFIX
from adapters.slack.installations import StoreInstallations
from adapters.slack.oauth import StoreAuthorize, oauth_flow
from adapters.slack.replays import Replays
from adapters.slack.settings import (
    APP_TOKEN,
    BOT_TOKEN,
    CLIENT_SECRET,
    SIGNING_SECRET,
    SlackSettings,
)
from adapters.slack.workspaces import Speaker, Workspaces
from bot.platform import ConfigError, Context, Health

NOT_READY = "Error: tallybot is not connected to Slack yet; try again in a minute."
"""What bolt shows instead of an answer when a request cannot be authorized yet."""


class SlackAdapter(SlackCommands):
    """Slack for tallybot: delivery (``SlackSender``), commands (``SlackCommands``), lifecycle."""

    def __init__(
        self,
        settings: SlackSettings,
        context: Context,
        *,
        admin_cache_seconds: float = 300.0,
        history_limit: int = 200,
        timeout: int = 30,
        monotonic: Callable[[], float] | None = None,
    ) -> None:
        bot_token = context.secrets.get(BOT_TOKEN) if settings.oauth else context.secret(BOT_TOKEN)
        app_token = context.secrets.get(APP_TOKEN)
        signing_secret = context.secrets.get(SIGNING_SECRET)
        if settings.mode == "socket" and app_token is None:
            raise ConfigError("SLACK_APP_TOKEN is not set: Socket Mode needs the xapp- token")
        if settings.mode == "http" and signing_secret is None:
            raise ConfigError("SLACK_SIGNING_SECRET is not set: HTTP mode needs it")

        # retry_handlers=[]: the dispatcher owns retries (slack_sdk's default handler resends
        # a request whose answer was lost, which would double a chat.postMessage).
        def make_client(token: str | None) -> AsyncWebClient:
            return AsyncWebClient(
                token=token, base_url=settings.api_base, timeout=timeout, retry_handlers=[]
            )

        client = make_client(bot_token.reveal() if bot_token else None)
        super().__init__(
            client,
            settings,
            context,
            admin_cache_seconds=admin_cache_seconds,
            history_limit=history_limit,
            monotonic=monotonic,
        )
        self.http_host = settings.host
        self.http_port = settings.port
        self.serve_http = not context.ops_server and (settings.mode == "http" or settings.oauth)
        """HTTP mode: serve the endpoint on our own port; False when the ops server mounts
        ``http_routes()`` instead."""
        self._app_token = app_token
        known = bot_token or app_token
        self.budget_key = known.fingerprint() if known is not None else ""
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        self._revocations: AsyncTokenRevocationListeners | None = None
        signing = signing_secret.reveal() if signing_secret else ""
        self._single: Speaker | None = None
        """The single token's bot, from the auth.test made on opening."""
        if not settings.oauth:
            # Requests are authorized from that one auth.test (bolt's own would call it again
            # for every request before its first answer, and apologise generically on a 429).
            self.bolt = AsyncApp(
                name="tallybot",
                client=client,
                signing_secret=signing,
                logger=log,
                authorize=StoreAuthorize(self._single_bot),  # type: ignore[arg-type]
                user_facing_authorize_error_message=NOT_READY,
            )
        else:
            if context.store is None:
                raise ConfigError(
                    "[slack] client_id: the OAuth flow keeps installations in the store"
                )
            assert settings.client_id is not None
            installations = StoreInstallations(
                context.store, settings.client_id, context.clock, on_save=self._installed
            )
            self.workspaces = Workspaces(
                single=None,
                installations=installations,
                make_client=make_client,
                monotonic=monotonic or context.clock.monotonic,
                install_hint=f"; install it again at {settings.install_path}",
            )
            flow = oauth_flow(
                settings,
                context.secret(CLIENT_SECRET),
                installations,
                context.store,
                context.clock,
                timeout,
            )
            # Bolt gives each request a client with its workspace's token (StoreAuthorize);
            # an AsyncAuthorize is taken as it is, whatever the annotation says.
            self.bolt = AsyncApp(
                name="tallybot",
                client=make_client(None),
                signing_secret=signing,
                logger=log,
                authorize=StoreAuthorize(self.workspaces.find),  # type: ignore[arg-type]
                user_facing_authorize_error_message=(
                    "tallybot is not installed in this workspace (or was removed): "
                    f"install it at {settings.install_path}"
                ),
                oauth_flow=flow,
                installation_store=installations,
            )
            self._revocations = AsyncTokenRevocationListeners(installations)
            self.bolt.event("app_uninstalled")(self._on_uninstalled)
            self.bolt.event("tokens_revoked")(self._on_tokens_revoked)
        self.replays = Replays(context.clock, context.store)
        self.bolt.use(self.replays.middleware)
        self.bolt.command("/count")(self._on_command)
        self.bolt.event("app_mention")(self._on_mention)
        self.bolt.event("user_change")(self._on_user_change)
        self.bolt.view_submission(re.compile(re.escape(CALLBACK_PREFIX) + ".+"))(self._on_view)

    # ----------------------------------------------------------------- lifecycle

    async def aopen(self) -> None:
        if self.client.token is not None:
            await self._auth_test()
        if self.config.mode == "socket":
            await self._connect_socket()
        if self.serve_http:
            await self._serve_http()

    async def _auth_test(self) -> None:
        """Who the single token is (its workspace, the bot's ids); refused: ``ConfigError``."""
        try:
            auth = await self.client.auth_test()
        except SlackApiError as exc:
            raise ConfigError(
                f"SLACK_BOT_TOKEN was refused by Slack ({exc.response.get('error')})"
            ) from exc
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            raise translate(exc, f"slack auth.test at {self.config.api_base}") from exc
        self.team_id = str(auth["team_id"])
        self.bot_user_id = str(auth["user_id"])
        self.bot_id = auth.get("bot_id")
        self._single = Speaker(self.client, self.bot_id, self.bot_user_id, self.team_id)
        if self.workspaces is not None:
            self.workspaces.single = self._single

    async def _single_bot(self, team_id: str | None) -> Speaker | None:
        """The bot of every workspace with the single token (None until it is known)."""
        return self._single

    async def finish_commands(self) -> None:
        await self.inflight.finish()

    async def aclose(self) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close_async()  # type: ignore[no-untyped-call]
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self.inflight.finish()
        await self.close_sender()

    async def health(self) -> Health:
        """In Socket Mode, whether the socket is connected now (slack_sdk reconnects it)."""
        if self.config.mode != "socket":
            return Health()
        socket = self._socket
        if socket is None:
            return Health.down("the Slack Socket Mode connection is closed")
        if not await socket.client.is_connected():
            return Health.down("the Slack Socket Mode connection is down (reconnecting)")
        return Health()

    async def _connect_socket(self) -> None:
        assert self._app_token is not None
        socket = AsyncSocketModeHandler(self.bolt, self._app_token.reveal())
        try:
            await socket.connect_async()  # type: ignore[no-untyped-call]
        except SlackApiError as exc:
            await socket.close_async()  # type: ignore[no-untyped-call]
            raise ConfigError(
                f"SLACK_APP_TOKEN was refused by Slack ({exc.response.get('error')})"
            ) from exc
        self._socket = socket

    async def _serve_http(self) -> None:
        runner = web.AppRunner(self.web_app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.http_host, self.http_port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.http_port = int(runner.addresses[0][1])

    # ------------------------------------------------------------------ HTTP mode

    def routes(self) -> list[web.RouteDef]:
        """The Events API / slash command endpoint at ``http_path``, for any aiohttp app."""
        return [web.post(self.config.http_path, self._http)]

    def http_routes(self) -> list[web.RouteDef]:
        """What the ops server mounts: the endpoint in HTTP mode, and the install and redirect
        pages of the OAuth flow when it is on."""
        routes = self.routes() if self.config.mode == "http" else []
        if self.config.oauth:
            routes.append(web.get(self.config.install_path, self._install))
            routes.append(web.get(self.config.redirect_path, self._oauth_redirect))
        return routes

    def web_app(self) -> web.Application:
        app = web.Application()
        app.add_routes(self.http_routes())
        return app

    async def _install(self, request: web.Request) -> web.Response:
        flow = self.bolt.oauth_flow
        assert flow is not None
        return await to_aiohttp_response(
            await flow.handle_installation(await to_bolt_request(request))
        )

    async def _oauth_redirect(self, request: web.Request) -> web.Response:
        flow = self.bolt.oauth_flow
        assert flow is not None
        return await to_aiohttp_response(await flow.handle_callback(await to_bolt_request(request)))

    def _installed(self, team_id: str | None) -> None:
        assert self.workspaces is not None
        self.workspaces.forget(team_id)
        log.info("slack: the app was installed in the workspace %s", team_id)

    async def _on_user_change(self, event: dict[str, object], context: AsyncBoltContext) -> None:
        """A member's profile changed; when the change is their deactivation (they left the
        workspace, or were removed), the follows they made here end. Slack still takes posts to
        a deactivated member's DM (python-slack-sdk#1156): without this they would go on."""
        user = event.get("user")
        if not isinstance(user, dict) or user.get("deleted") is not True:
            return  # a status, a name, a photo: most of these events
        user_id = str(user.get("id") or "")
        workspace = str(context.team_id or self.team_id or "")
        if user_id and workspace:
            await self.context.person_left(
                PLATFORM, workspace, user_id, "deactivated in the Slack workspace"
            )

    async def _on_uninstalled(self, context: AsyncBoltContext) -> None:
        assert self._revocations is not None
        assert self.workspaces is not None
        await self._revocations.handle_app_uninstalled_events(context)
        self.workspaces.removed(context.team_id)
        log.warning("slack: the app was uninstalled from the workspace %s", context.team_id)

    async def _on_tokens_revoked(self, event: dict[str, object], context: AsyncBoltContext) -> None:
        assert self._revocations is not None
        assert self.workspaces is not None
        await self._revocations.handle_tokens_revoked_events(event, context)
        self.workspaces.removed(context.team_id)
        log.warning("slack: tokens were revoked in the workspace %s", context.team_id)

    async def _http(self, request: web.Request) -> web.Response:
        bolt_response = await self.bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)
