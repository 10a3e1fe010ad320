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

Commands. ``/count <text>`` is acknowledged at once and answered through ``respond()``:
ephemeral for errors and lists, in the channel for status and subscriptions. ``/count chart``
is answered with the PNG uploaded into the channel (the reply's text as its comment), or an
ephemeral error when it cannot be (the bot not in the channel, ``files:write`` missing). An
app_mention (``@tallybot status bessemer-2021``) is answered in a thread (ephemerally for
errors); an event Slack delivers again (same event_id) is handled once. Admin commands are
allowed for the configured user ids (checked by ``bot.commands``) and, unless turned off, for
admins and owners of the workspace the command comes from (users.info, cached a few minutes),
when the operator lists that workspace under ``[admins] slack_workspaces``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from types import TracebackType
from typing import Any, Protocol, Self

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.commands.parse import ADMIN_VERBS, parse
from bot.commands.request import Reply, Request
from bot.config import Admins, SlackConfig
from bot.delivery.pacing import Limits
from bot.domain.message import Attachment
from bot.errors import (
    CommandError,
    ConfigError,
    DeliveryError,
    TransientDeliveryError,
)
from bot.secrets import Secret
from bot.subscription import ChannelRef, Platform

from .slack_blocks import (
    file_comment,
    reply_payload,
)
from .slack_delivery import SLACK_LIMITS, SlackSender, translate
from .slack_payloads import (
    AppMention,
    EventCallback,
    SlashCommand,
    as_json,
)

log = logging.getLogger("tallybot.slack")


class _QuietTokenWarning(logging.Filter):
    """bolt warns that the token it read from SLACK_BOT_TOKEN is unused when it is given a
    client: true, and the client carries that very token. Not worth an operator's attention."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("As you gave `client` as well")


log.addFilter(_QuietTokenWarning())

INVITE_FIX = "invite the bot with /invite @tallybot"
FAILED = "Error: tallybot could not do that (an internal error, in the operator's log); try again."
SEEN_EVENTS = 2048
"""How many event ids are remembered to drop Slack's redeliveries (a bounded LRU)."""

Handler = Callable[[Request], Awaitable[Reply]]


class SupportsHandle(Protocol):
    async def handle(self, request: Request) -> Reply: ...


MENTION = re.compile(r"<@([A-Z0-9]+)(?:\|[^>]*)?>")


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """The command in ``<@BOT> status bessemer-2021``: what follows the bot's mention."""
    for m in MENTION.finditer(text):
        if bot_user_id is None or m.group(1) == bot_user_id:
            return text[m.end() :].strip()
    return text.strip()


def needs_admin(text: str) -> bool:
    """Whether ``text`` is an admin command (worth a users.info); unreadable text is not (the
    command layer answers it with the error)."""
    try:
        return parse(text).verb in ADMIN_VERBS
    except (CommandError, ValueError):
        return False


class SlackAdapter(SlackSender):
    """Slack for tallybot: the delivery half (``SlackSender``), the lifecycle, the commands."""

    def __init__(
        self,
        commands: SupportsHandle | Handler,
        config: SlackConfig,
        *,
        bot_token: Secret,
        app_token: Secret | None = None,
        signing_secret: Secret | None = None,
        admins: Admins | None = None,
        http_host: str = "127.0.0.1",
        http_port: int = 3000,
        serve_http: bool = True,
        limits: Limits = SLACK_LIMITS,
        admin_cache_seconds: float = 300.0,
        history_limit: int = 200,
        timeout: int = 30,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if config.mode not in ("socket", "http"):
            raise ConfigError(f"slack.mode: must be 'socket' or 'http', not {config.mode!r}")
        if config.mode == "socket" and app_token is None:
            raise ConfigError("SLACK_APP_TOKEN is not set: Socket Mode needs the xapp- token")
        if config.mode == "http" and signing_secret is None:
            raise ConfigError("SLACK_SIGNING_SECRET is not set: HTTP mode needs it")
        self._handle: Handler = commands if callable(commands) else commands.handle
        self.config = config
        self.admins = admins or Admins()
        self.http_host = http_host
        self.http_port = http_port
        self.serve_http = serve_http
        """HTTP mode: serve the endpoint on our own port; False when the ops server mounts
        ``http_routes()`` instead."""
        self.team_id: str | None = None
        self._app_token = app_token
        self._admin_ttl = admin_cache_seconds
        self._monotonic = monotonic
        self._admin_cache: dict[str, tuple[float, bool]] = {}
        self._seen_events: OrderedDict[str, None] = OrderedDict()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        # retry_handlers=[]: the dispatcher owns retries (slack_sdk's default handler resends
        # a request whose answer was lost, which would double a chat.postMessage).
        client = AsyncWebClient(
            token=bot_token.reveal(), base_url=config.api_base, timeout=timeout, retry_handlers=[]
        )
        super().__init__(client, limits=limits, history_limit=history_limit)
        self.bolt = AsyncApp(
            name="tallybot",
            client=self.client,
            signing_secret=signing_secret.reveal() if signing_secret else "",
            logger=log,
        )
        self.bolt.command("/count")(self._on_command)
        self.bolt.event("app_mention")(self._on_mention)

    # ----------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Self:
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
        if self.config.mode == "socket":
            await self._connect_socket()
        elif self.serve_http:
            await self._serve_http()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        socket, self._socket = self._socket, None
        if socket is not None:
            await socket.close_async()  # type: ignore[no-untyped-call]
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self._finish_inflight()
        await self.close_sender()

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

    async def _finish_inflight(self, timeout: float = 10.0) -> None:  # noqa: ASYNC109
        """Let command handlers that are still answering finish (cancel them after timeout)."""
        pending = {t for t in self._inflight if t is not asyncio.current_task()}
        if not pending:
            return
        _, late = await asyncio.wait(pending, timeout=timeout)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)

    @contextlib.contextmanager
    def _tracked(self) -> Iterator[None]:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._inflight.discard(task)

    # ------------------------------------------------------------------ HTTP mode

    def routes(self) -> list[web.RouteDef]:
        """The Events API / slash command endpoint at ``http_path``, for any aiohttp app."""
        return [web.post(self.config.http_path, self._http)]

    def http_routes(self) -> list[web.RouteDef]:
        """What the ops server mounts: the endpoint in HTTP mode, nothing in Socket Mode."""
        return self.routes() if self.config.mode == "http" else []

    def web_app(self) -> web.Application:
        app = web.Application()
        app.add_routes(self.routes())
        return app

    async def _http(self, request: web.Request) -> web.Response:
        bolt_response = await self.bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)

    # ------------------------------------------------------------------- commands

    async def _on_command(
        self, ack: AsyncAck, command: SlashCommand, respond: AsyncRespond
    ) -> None:
        await ack()
        with self._tracked():
            try:
                await self._command(command, respond)
            except Exception:  # every command gets an answer, whatever went wrong
                log.exception("slack /count %r failed", str(command.get("text") or "")[:200])
                try:
                    await respond(text=FAILED, response_type="ephemeral")
                except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                    log.warning("could not answer a failed /count either: %s", exc)

    async def _command(self, command: SlashCommand, respond: AsyncRespond) -> None:
        text = str(command.get("text") or "")
        request = await self._request(
            team=command.get("team_id"),
            channel=str(command.get("channel_id") or ""),
            user=str(command.get("user_id") or ""),
            name=str(command.get("user_name") or command.get("user_id") or ""),
            text=text,
        )
        reply = await self._answer(request)
        if reply.attachment is not None and reply.ok and not reply.ephemeral:
            failed = await self._share(request.channel.channel, reply, reply.attachment)
            if failed is None:
                return  # the file, with the reply's text, is the answer
            reply = failed
        body, blocks = reply_payload(reply)
        answer = await respond(
            text=body,
            blocks=as_json(blocks) if blocks else None,
            response_type="ephemeral" if reply.ephemeral else "in_channel",
        )
        if answer.status_code != 200:
            log.warning("slack /count reply refused: %s %s", answer.status_code, answer.body)

    async def _on_mention(self, body: EventCallback, event: AppMention) -> None:
        if not self.first_delivery(str(body.get("event_id") or "")):
            return
        if event.get("bot_id") or not event.get("user"):
            return
        with self._tracked():
            try:
                await self._mention(body, event)
            except Exception:  # every command gets an answer, whatever went wrong
                log.exception("slack mention %r failed", str(event.get("text") or "")[:200])
                channel, user = str(event.get("channel") or ""), str(event["user"])
                thread = event.get("thread_ts") or event.get("ts")
                try:
                    await self.client.chat_postEphemeral(
                        channel=channel, user=user, text=FAILED, thread_ts=thread
                    )
                except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                    log.warning("could not answer a failed mention either: %s", exc)

    async def _mention(self, body: EventCallback, event: AppMention) -> None:
        user = str(event["user"])
        channel = str(event.get("channel") or "")
        request = await self._request(
            team=body.get("team_id") or event.get("team"),
            channel=channel,
            user=user,
            name=user,
            text=strip_mention(str(event.get("text") or ""), self.bot_user_id),
        )
        reply = await self._answer(request)
        thread = event.get("thread_ts") or event.get("ts")
        if reply.attachment is not None and reply.ok and not reply.ephemeral:
            failed = await self._share(channel, reply, reply.attachment, thread_ts=thread)
            if failed is None:
                return
            reply = failed
        text, blocks = reply_payload(reply)
        kwargs: dict[str, Any] = {"blocks": as_json(blocks) if blocks else None}
        try:
            if reply.ephemeral:
                await self.client.chat_postEphemeral(
                    channel=channel, user=user, text=text, thread_ts=thread, **kwargs
                )
            else:
                await self.client.chat_postMessage(
                    channel=channel, text=text, thread_ts=thread, unfurl_links=False, **kwargs
                )
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            log.warning("%s", translate(exc, f"slack mention reply in {channel}"))

    async def _share(
        self, channel: str, reply: Reply, attachment: Attachment, *, thread_ts: str | None = None
    ) -> Reply | None:
        """Answer a command with its file (the reply's text as the comment); None when done,
        else the error to answer with instead (privately)."""
        title = reply.text.rstrip(".") or attachment.filename
        try:
            await self.upload(
                channel,
                attachment,
                title=title,
                thread_ts=thread_ts,
                comment=file_comment(reply.text),
            )
        except DeliveryError as exc:
            error = str(exc).replace(
                f"slack upload of {attachment.filename} to {channel}",
                "the chart could not be posted here",
            )
            log.warning("slack: %s", error)
            if isinstance(exc, TransientDeliveryError):
                return Reply(f"Error: {error}; try again in a minute.", ok=False)
            return Reply(f"Error: {error}", ok=False)
        return None

    def first_delivery(self, event_id: str) -> bool:
        """False for an event id seen before (Slack's retries), remembering the latest ones."""
        if not event_id:
            return True
        if event_id in self._seen_events:
            self._seen_events.move_to_end(event_id)
            return False
        self._seen_events[event_id] = None
        while len(self._seen_events) > SEEN_EVENTS:
            self._seen_events.popitem(last=False)
        return True

    async def _request(
        self, *, team: object, channel: str, user: str, name: str, text: str
    ) -> Request:
        workspace = str(team or self.team_id or "")
        admin = False
        if (
            self.admins.slack_workspace_admins
            and user not in self.admins.slack_users
            and needs_admin(text)
        ):
            admin = await self.is_workspace_admin(user, workspace)
        return Request(
            ChannelRef(Platform.SLACK, workspace, channel),
            user_id=user,
            user_name=name,
            text=text.strip(),
            platform_admin=admin,
        )

    async def _answer(self, request: Request) -> Reply:
        try:
            return await self._handle(request)
        except Exception:
            log.exception("slack command %r failed", request.text)
            return Reply("Error: something went wrong; the bot's log has the details.", ok=False)

    async def is_workspace_admin(self, user_id: str, workspace: str) -> bool:
        """Whether users.info says the user is an admin or owner of ``workspace`` (cached, fails
        closed). A user from another workspace (a shared channel, another workspace of an
        organisation) is not, whatever their rights at home: ``bot.commands`` then decides
        whether ``workspace`` is one where workspace admins count."""
        now = self._monotonic()
        key = f"{workspace}/{user_id}"
        cached = self._admin_cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        try:
            response = await self.client.users_info(user=user_id)
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            log.warning("slack users.info %s failed: %s", user_id, exc)
            return False
        user = response.get("user") or {}
        admin = user.get("team_id") == workspace and any(
            bool(user.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner")
        )
        self._admin_cache[key] = (now + self._admin_ttl, admin)
        return admin
