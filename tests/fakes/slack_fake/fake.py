"""FakeSlack: a local Slack (Web API + Socket Mode + response_url) for end-to-end tests."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from tests.fakes.loopback.notify import ChangeNotifier
from tests.fakes.loopback.server import LoopbackServer

from .http_mode import HttpMode
from .interactions import Interactions
from .manifest import Manifest, load_manifest
from .oauth import Installs
from .records import (
    ACK_DEADLINE_S,
    RecordedCall,
    RecordedEphemeral,
    RecordedSlackMessage,
    RecordedUpload,
    ResponseUrlPost,
    SocketDelivery,
)
from .socket_mode import SocketConnection, SocketModeServer
from .views import Modals
from .web_api import WebApi
from .workspace import Workspace

DEFAULT_ACK_WAIT_S = ACK_DEADLINE_S + 1.0
MAX_UPLOAD_BYTES = 64 * 1024 * 1024


class FakeSlack(HttpMode, Installs, Modals, LoopbackServer):
    """A strict local Slack on 127.0.0.1 (port 0) for the real slack_sdk / slack_bolt clients.

    Use as `async with FakeSlack() as fake:`; point `AsyncWebClient(base_url=fake.api_url)` at
    it. Everything the fake times (rate limits, ack latency, response_url expiry, call times)
    reads `clock` (default time.monotonic), so a test can drive it (the ack deadline reads
    `ack_clock`); waits are real time."""

    def __init__(
        self,
        *,
        bot_token: str = "xoxb-fake-bot-token",
        app_token: str = "xapp-fake-app-token",
        signing_secret: str = "fake-signing-secret",
        post_per_channel_per_s: float = 1.0,
        post_burst: int = 3,
        update_per_min: int = 50,
        clock: Callable[[], float] | None = None,
        ack_clock: Callable[[], float] | None = None,
        retry_after: int | None = None,
        method_limits_per_min: Mapping[str, int] | None = None,
        method_windows: Mapping[str, tuple[int, float]] | None = None,
        manifest: Manifest | None = None,
    ) -> None:
        """`retry_after` fixes the Retry-After header (e.g. 0) instead of the honest wait.

        `method_limits_per_min` overrides per-minute limits by method name
        (defaults: chat.update `update_per_min`, Tier 3 methods 50, Tier 4 methods 100).
        `method_windows` sets a workspace-wide limit of N calls in any W seconds by method name,
        e.g. ``{"chat.postMessage": (5, 1.0)}`` (on top of chat.postMessage's per-channel one).
        `manifest`: the app as Slack makes it from one (default the shipped; manifest.py).
        `ack_clock`: the clock of Socket Mode's 3 s ack deadline (default time.monotonic, whatever
        `clock` is): Slack's deadline is on the wall clock, as HTTP mode's is here. A bot that
        shares a virtual `clock` with the fake advances it with its paced replies while an
        envelope is in flight, so virtual seconds would make a prompt ack look late; a test of
        the deadline itself passes its own clock.
        """
        if not bot_token.startswith("xoxb-") or not app_token.startswith("xapp-"):
            raise ValueError("bot_token must start with xoxb- and app_token with xapp-")
        self.bot_token = bot_token
        self.app_token = app_token
        self.signing_secret = signing_secret
        self.verification_token = "fake-verification-token"
        self.clock: Callable[[], float] = clock or time.monotonic
        self._notifier = ChangeNotifier()
        self._workspace = Workspace()
        self.manifest = manifest or load_manifest()
        self._web = WebApi(
            workspace=self._workspace,
            manifest=self.manifest,
            bot_token=bot_token,
            app_token=app_token,
            clock=self.clock,
            post_per_channel_per_s=post_per_channel_per_s,
            post_burst=post_burst,
            update_per_min=update_per_min,
            method_limits_per_min=method_limits_per_min,
            method_windows=method_windows,
            retry_after=retry_after,
            open_socket_url=lambda: self._socket.new_url(),
            base_url=lambda: self.base_url,
            on_change=self._notifier.notify,
        )
        self.hangs = self._web.hangs  # a channel whose requests hang (tests.fakes.loopback.hangs)
        self._socket = SocketModeServer(
            workspace=self._workspace,
            ws_base=lambda: self.base_url.replace("http://", "ws://", 1),
            notifier=self._notifier,
            clock=self.clock,
            ack_clock=ack_clock or time.monotonic,
        )
        self.views = self._web.views
        self._interactions = Interactions(
            workspace=self._workspace,
            verification_token=self.verification_token,
            base_url=lambda: self.base_url,
            clock=self.clock,
            notifier=self._notifier,
            views=self.views,
            manifest=self.manifest,
        )

    # ------------------------------------------------------------ lifecycle

    shutdown_timeout = 2.0

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_UPLOAD_BYTES)
        app.router.add_route("*", "/api/{method}", self._web.handle)
        app.router.add_post("/upload/v1/{secret}", self._web.files.handle)
        app.router.add_post(
            "/commands/{team}/{hook}/{secret}", self._interactions.handle_response_url
        )
        app.router.add_get("/socket", self._socket.handle)
        self._web.oauth.add_routes(app)
        return app

    async def stopping(self) -> None:
        await self._socket.close_all()

    @property
    def base_url(self) -> str:
        """ "http://127.0.0.1:PORT/"."""
        if self._port is None:
            raise RuntimeError("FakeSlack is not running: use `async with FakeSlack() as fake`")
        return f"http://127.0.0.1:{self._port}/"

    @property
    def api_url(self) -> str:
        """ "http://127.0.0.1:PORT/api/": AsyncWebClient(base_url=...)."""
        return f"{self.base_url}api/"

    # ------------------------------------------------------------ workspace

    @property
    def team_id(self) -> str:
        return self._workspace.team_id

    @property
    def team_domain(self) -> str:
        return self._workspace.team_domain

    @property
    def app_id(self) -> str:
        return self._workspace.app_id

    @property
    def bot_id(self) -> str:
        return self._workspace.bot_id

    @property
    def bot_user_id(self) -> str:
        return self._workspace.bot_user_id

    def add_channel(
        self,
        name: str,
        *,
        member: bool = True,
        is_private: bool = False,
        team_id: str | None = None,
    ) -> str:
        """Create a channel (the bot in it unless member=False) in the first workspace or
        ``team_id``; returns its "C..." id."""
        return self._workspace.add_channel(
            name, member=member, is_private=is_private, team_id=team_id
        )

    def add_user(
        self,
        name: str,
        *,
        is_admin: bool = False,
        is_owner: bool = False,
        team_id: str | None = None,
    ) -> str:
        """Create a member of the first workspace or ``team_id`` (its admin or owner if
        asked); returns its "U..." id."""
        return self._workspace.add_user(name, is_admin=is_admin, is_owner=is_owner, team_id=team_id)

    def deactivate_user(self, user_id: str) -> None:
        """The member's account is deactivated: conversations.open answers ``user_disabled``
        (posts to a DM opened before still succeed, as on Slack)."""
        self._workspace.known_user(user_id).deleted = True

    async def user_left(self, user_id: str) -> SocketDelivery | None:
        """The member's account is deactivated (they left, or were removed from, the workspace),
        and Slack tells the apps whose manifest subscribes to ``user_change``: the event carries
        the member's user object, ``deleted`` true. None when the manifest does not subscribe."""
        self.deactivate_user(user_id)
        if "user_change" not in self.manifest.bot_events:
            return None
        user = self._workspace.known_user(user_id)
        event = {"type": "user_change", "user": user.to_api()}
        return await self.send_event(event, team_id=user.team_id)

    def dm_of(self, user_id: str) -> str | None:
        """The id of the member's direct message with the bot, once opened."""
        ws = self._workspace
        return next((c.id for c in ws.channels.values() if c.im_user == user_id), None)

    def refuse_dm(self, user_id: str, error: str = "channel_not_found") -> None:
        """Later posts to the member's direct message answer ``error``."""
        ws = self._workspace
        found = next(c for c in ws.channels.values() if c.im_user == user_id)
        found.refusal = error

    def archive_channel(self, channel_id: str) -> None:
        """Later writes answer `is_archived`; conversations.info shows is_archived."""
        self._workspace.known_channel(channel_id).is_archived = True

    def delete_channel(self, channel_id: str) -> None:
        """Later calls naming the channel answer `channel_not_found`."""
        self._workspace.known_channel(channel_id).deleted = True

    def kick_bot(self, channel_id: str) -> None:
        """Later writes and history reads answer `not_in_channel`
        (`channel_not_found` for a private channel)."""
        self._workspace.known_channel(channel_id).is_member = False

    def invite_bot(self, channel_id: str) -> None:
        self._workspace.known_channel(channel_id).is_member = True

    def post_user_message(self, channel_id: str, user_id: str, text: str) -> str:
        """A message by a human user (shows in conversations.history); returns its ts."""
        channel = self._workspace.known_channel(channel_id)
        user = self._workspace.known_user(user_id)
        message = self._workspace.add_message(
            channel,
            text=text,
            blocks=None,
            metadata=None,
            user=user.id,
            from_bot=False,
            thread_ts=None,
            source="user",
            now=self.clock(),
        )
        self._notifier.notify()
        return message.ts

    def messages(self, channel_id: str) -> list[RecordedSlackMessage]:
        """Every message of the channel in posting order, current state (deleted ones flagged)."""
        return list(self._workspace.known_channel(channel_id).messages)

    # ------------------------------------------------------------ recordings

    @property
    def calls(self) -> list[RecordedCall]:
        return self._web.calls

    def calls_to(self, method: str) -> list[RecordedCall]:
        return [c for c in self._web.calls if c.method == method]

    @property
    def count_429(self) -> int:
        return self._web.count_429

    @property
    def uploads(self) -> list[RecordedUpload]:
        return self._web.uploads

    @property
    def ephemerals(self) -> list[RecordedEphemeral]:
        return self._web.ephemerals

    @property
    def response_url_posts(self) -> list[ResponseUrlPost]:
        return self._interactions.response_url_posts

    @property
    def deliveries(self) -> list[SocketDelivery]:
        return self._socket.deliveries

    @property
    def socket_connections(self) -> list[SocketConnection]:
        """Every Socket Mode connection ever opened, oldest first."""
        return self._socket.connections

    @property
    def live_socket_connections(self) -> list[SocketConnection]:
        return self._socket.live

    @property
    def stray_socket_frames(self) -> list[str]:
        """Frames the client sent that were not a valid ack of a known envelope."""
        return self._socket.stray_frames

    def fail_next(
        self,
        method: str,
        *,
        status: int = 500,
        error: str | None = None,
        times: int = 1,
        commit: bool = False,
        drop: bool = False,
        channel: str | None = None,
        retry_after: float = 1.0,
    ) -> None:
        """Make the next `times` calls of `method` ("response_url": posts to one) fail; with
        `channel`, only calls about that channel (a 429 says `retry_after`).

        The answer is HTTP `status` with {"ok": false, "error": error} (default error by
        status: 429 ratelimited + Retry-After, 503 service_unavailable, else internal_error).
        commit=True: it takes effect, only its answer fails; drop=True: no answer (lost).
        """
        if method == "response_url":  # only 429s, with Retry-After: 1
            self._interactions.limited_responses += times
        else:
            self._web.fail_next(
                method, status=status, error=error, times=times, commit=commit, drop=drop,
                channel=channel, retry_after=retry_after,
            )  # fmt: skip

    async def wait_for(
        self,
        predicate: Callable[[], bool],
        timeout: float = 5,  # noqa: ASYNC109 - the documented API takes a timeout
    ) -> None:
        """Return once predicate() holds; re-checked whenever the fake records something."""
        await self._notifier.wait_for(predicate, timeout)

    # ----------------------------------------------------------- Socket Mode

    def slash_command_payload(
        self, *, command: str, text: str, user_id: str, channel_id: str
    ) -> dict[str, str]:
        """A fresh slash-command payload (with its own response_url) for HTTP-mode tests."""
        return self._interactions.slash_command(
            command=command, text=text, user_id=user_id, channel_id=channel_id
        )

    def event_payload(
        self, event: dict[str, Any], *, event_id: str | None = None, team_id: str | None = None
    ) -> dict[str, Any]:
        return self._interactions.event_callback(event, event_id=event_id, team_id=team_id)

    async def send_slash_command(
        self,
        *,
        command: str,
        text: str,
        user_id: str,
        channel_id: str,
        ack_wait: float = DEFAULT_ACK_WAIT_S,
    ) -> SocketDelivery:
        """Send a `slash_commands` envelope; return once acked or after `ack_wait` seconds."""
        payload = self.slash_command_payload(
            command=command, text=text, user_id=user_id, channel_id=channel_id
        )
        return await self._deliver(
            "slash_commands", payload, True, {}, payload["response_url"], ack_wait
        )

    async def send_event(
        self,
        event: dict[str, Any],
        *,
        retry_attempt: int = 0,
        retry_reason: str = "",
        event_id: str | None = None,
        ack_wait: float = DEFAULT_ACK_WAIT_S,
        team_id: str | None = None,
    ) -> SocketDelivery:
        """Send an `events_api` envelope (from the first workspace or ``team_id``); reuse
        event_id with retry_attempt > 0 for a retry."""
        payload = self.event_payload(event, event_id=event_id, team_id=team_id)
        extra = {"retry_attempt": retry_attempt, "retry_reason": retry_reason}
        return await self._deliver("events_api", payload, False, extra, None, ack_wait)

    async def _deliver(
        self,
        envelope_type: str,
        payload: dict[str, Any],
        accepts_response_payload: bool,
        extra: dict[str, Any],
        response_url: str | None,
        ack_wait: float,
    ) -> SocketDelivery:
        try:
            return await self._socket.deliver(
                envelope_type=envelope_type,
                payload=payload,
                accepts_response_payload=accepts_response_payload,
                extra=extra,
                response_url=response_url,
                ack_wait=ack_wait,
                connect_wait=5.0,
            )
        except TimeoutError:
            raise TimeoutError("no Socket Mode connection to deliver to") from None

    async def kill_socket(self) -> None:
        """Socket Mode goes down: live connections are closed and new ones refused (503) until
        :meth:`revive_socket`."""
        self._socket.down = True
        await self._socket.close_all()

    def revive_socket(self) -> None:
        self._socket.down = False

    @property
    def refused_socket_connects(self) -> int:
        """Socket Mode connections refused (a used ticket, or while the socket is down)."""
        return self._socket.rejected_connects

    async def disconnect_socket(self, reason: str = "refresh_requested") -> None:
        """Send {"type": "disconnect"} on the live connections; they get no new envelopes."""
        await self._socket.request_disconnect(reason)
