"""The Slack adapter: Block Kit posts and live-scoreboard edits, ``/count`` and ``@tallybot``.

Built on slack-bolt's ``AsyncApp`` and slack_sdk's ``AsyncWebClient``. Socket Mode by default
(``SLACK_APP_TOKEN``, no public URL); HTTP mode as an option (an aiohttp app that verifies
request signatures and refuses stale timestamps, through bolt, with ``SLACK_SIGNING_SECRET``).

Delivery. The dispatcher owns pacing and retries; this adapter reports Slack's limits
(``SLACK_LIMITS``) and turns every failure into ``TransientDeliveryError`` (429 with its
Retry-After, 5xx, timeouts, dropped connections), ``PermanentDeliveryError`` (channel gone or
archived, bot not invited, token or scopes refused, a payload Slack rejects) or ``MessageGone``
(the scoreboard to edit was deleted). The web client has no retry handlers: slack_sdk's default
one resends a request whose answer was lost, which doubles a chat.postMessage.

Exactly once. Slack has no idempotency key, so every post carries its delivery key in the
message metadata (``event_type`` ``tallybot_delivery``); when an earlier attempt may have gone
through (``maybe_sent``) the adapter first looks for that key among the channel's recent
messages (conversations.history, ``include_all_metadata``) and returns the earlier message's ts
instead of posting again: record-then-confirm. (conversations.history is Tier 3 for internal and
Marketplace apps; since 2025 Slack limits it much further for commercially distributed apps
outside the Marketplace, which tallybot, installed by each organisation itself, is not.)

Charts. A post with an attachment (the chart of a final tally) is the message as above, then
the PNG uploaded into the same channel with ``files_upload_v2`` (files.getUploadURLExternal, the
upload, files.completeUploadExternal; needs ``files:write``), in the message's thread
(``thread_ts``) so that it stays with the result it shows, whatever else the channel gets
meanwhile. Both are one delivery: a transient failure of the upload fails the delivery, which
the dispatcher retries; a permanent one (the scope missing) only leaves the chart out, logged,
since the message is out. A retry does not upload the chart twice: it is a retry with
``maybe_sent``, so the adapter finds its earlier message by the key in its metadata, and the
same conversations.history answer says who replied in that message's thread
(``reply_users``). The bot replies in the thread of its own delivery only with the chart, so
if the bot is among them the chart is there already; if not, it is uploaded now. No extra
request, nothing to record: the channel itself is the record. (Slack shares a completed
upload a moment after answering; a retry in that moment could miss it and show a second copy,
in the thread, never a second message. The dispatcher's backoff, a second or more, makes that
unlikely.)

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
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import TracebackType
from typing import Any, Protocol, Self

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapter import Attachment, Limits, Notice, Outgoing, Window
from bot.command_parse import ADMIN_VERBS, parse
from bot.commands import Reply, Request
from bot.config import Admins, SlackConfig
from bot.errors import (
    CommandError,
    ConfigError,
    DeliveryError,
    MessageGone,
    PermanentDeliveryError,
    TransientDeliveryError,
)
from bot.secrets import Secret
from bot.subscription import ChannelRef, Platform

from .slack_blocks import (
    alt_text,
    blocks_for,
    fallback_text,
    file_comment,
    file_title,
    reply_payload,
)
from .slack_payloads import (
    METADATA_EVENT_TYPE,
    AppMention,
    EventCallback,
    HistoryMessage,
    SlashCommand,
    as_json,
    delivery_metadata,
)

log = logging.getLogger("tallybot.slack")


class _QuietTokenWarning(logging.Filter):
    """bolt warns that the token it read from SLACK_BOT_TOKEN is unused when it is given a
    client: true, and the client carries that very token. Not worth an operator's attention."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("As you gave `client` as well")


log.addFilter(_QuietTokenWarning())

SLACK_LIMITS = Limits(
    # Slack documents a workspace-wide limit on chat.postMessage above the per-channel one
    # without giving a number (docs.slack.dev/apis/web-api/rate-limits, "Special tier"). 5 per
    # second (300 a minute, spread evenly) is our conservative choice; pass ``limits`` to change.
    requests=Window(5, 1.0),
    # "Posting messages: 1 per second" per channel, short bursts allowed but not guaranteed to
    # be displayed (same page). No bursts here.
    channel_posts=Window(1, 1.0),
    # chat.update is Tier 3, "50+ per minute", counted per method per workspace.
    edits=Window(50, 60.0),
    edits_per_channel=False,
)
INVITE_FIX = "invite the bot with /invite @tallybot"
FAILED = "Error: tallybot could not do that (an internal error, in the operator's log); try again."
GONE_ERRORS = frozenset({"message_not_found", "cant_update_message", "edit_window_closed"})
TRANSIENT_ERRORS = frozenset(
    {"ratelimited", "internal_error", "fatal_error", "service_unavailable", "request_timeout"}
)
AUTH_ERRORS = frozenset(
    {
        "not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired",
        "no_permission", "not_allowed_token_type", "ekm_access_denied", "team_access_not_granted",
        "org_login_required", "restricted_action", "app_deleted",
    }
)  # fmt: skip
SEEN_EVENTS = 2048
"""How many event ids are remembered to drop Slack's redeliveries (a bounded LRU)."""

Handler = Callable[[Request], Awaitable[Reply]]


class SupportsHandle(Protocol):
    async def handle(self, request: Request) -> Reply: ...


def retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds from a ``Retry-After`` header (Slack sends whole seconds), or None."""
    for name, value in (headers or {}).items():
        if name.lower() != "retry-after":
            continue
        raw = value[0] if isinstance(value, list | tuple) and value else value
        try:
            seconds = float(str(raw).strip())
        except ValueError:
            return None
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def translate(exc: BaseException, where: str, *, editing: bool = False) -> DeliveryError:
    """A slack_sdk / aiohttp failure as a tallybot delivery error (raise it ``from exc``)."""
    if not isinstance(exc, SlackApiError):
        what = (
            "no answer from Slack" if isinstance(exc, aiohttp.ClientError | OSError) else "failed"
        )
        return TransientDeliveryError(f"{where}: {what} ({type(exc).__name__}: {exc})")
    status = int(exc.response.status_code)
    error = str(exc.response.get("error") or f"HTTP {status}")
    if status == 429 or error == "ratelimited":
        wait = retry_after(exc.response.headers)
        return TransientDeliveryError(f"{where}: rate limited by Slack (429)", retry_after=wait)
    if editing and error in GONE_ERRORS:
        return MessageGone(f"{where}: the message to edit is gone ({error})")
    if status >= 500 or error in TRANSIENT_ERRORS:
        return TransientDeliveryError(f"{where}: Slack failed ({status} {error})")
    if error == "not_in_channel":
        return PermanentDeliveryError(
            f"{where}: the bot is not a member of the channel (not_in_channel): {INVITE_FIX}"
        )
    if error == "channel_not_found":
        return PermanentDeliveryError(
            f"{where}: channel_not_found: the channel was deleted, or it is private and the "
            f"bot is not in it ({INVITE_FIX})"
        )
    if error == "is_archived":
        return PermanentDeliveryError(f"{where}: the channel is archived (is_archived)")
    if error == "missing_scope":
        needed = exc.response.get("needed") or "a scope"
        return PermanentDeliveryError(
            f"{where}: missing_scope: the Slack app needs {needed}; add it (see "
            "config/slack-manifest.yml) and reinstall the app"
        )
    if error in AUTH_ERRORS:
        return PermanentDeliveryError(
            f"{where}: Slack refused the bot's token ({error}): check SLACK_BOT_TOKEN"
        )
    return PermanentDeliveryError(f"{where}: Slack refused the request ({error})")


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


class SlackAdapter:
    platform = Platform.SLACK

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
        self.limits = limits
        self.admins = admins or Admins()
        self.http_host = http_host
        self.http_port = http_port
        self.serve_http = serve_http
        """HTTP mode: serve the endpoint on our own port; False when the ops server mounts
        ``http_routes()`` instead."""
        self.team_id: str | None = None
        self.bot_user_id: str | None = None
        self.bot_id: str | None = None
        self._app_token = app_token
        self._admin_ttl = admin_cache_seconds
        self._history_limit = history_limit
        self._monotonic = monotonic
        self._admin_cache: dict[str, tuple[float, bool]] = {}
        self._seen_events: OrderedDict[str, None] = OrderedDict()
        self._inflight: set[asyncio.Task[Any]] = set()
        self._socket: AsyncSocketModeHandler | None = None
        self._runner: web.AppRunner | None = None
        # retry_handlers=[]: the dispatcher owns retries (slack_sdk's default handler resends
        # a request whose answer was lost, which would double a chat.postMessage).
        self.client = AsyncWebClient(
            token=bot_token.reveal(), base_url=config.api_base, timeout=timeout, retry_handlers=[]
        )
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

    # ------------------------------------------------------------------- delivery

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        maybe_sent: bool = False,
        attachment: Attachment | None = None,
    ) -> str:
        where = f"slack post to {channel}"
        earlier = await self.find_posted(channel, key) if maybe_sent else None
        if earlier is None:
            ts = await self._post_message(channel, content, key, where)
        else:
            ts = str(earlier.get("ts"))
            log.info("%s: %s was already posted as %s", where, key, ts)
            if attachment is not None and self.bot_user_id in (earlier.get("reply_users") or []):
                log.info("%s: its %s was already uploaded too", where, attachment.filename)
                return ts
        if attachment is not None:
            await self._upload_to_thread(channel, ts, content, attachment)
        return ts

    async def _post_message(
        self, channel: ChannelRef, content: Outgoing, key: str, where: str
    ) -> str:
        try:
            response = await self.client.chat_postMessage(
                channel=channel.channel,
                text=fallback_text(content),
                blocks=as_json(blocks_for(content)),
                metadata=dict(delivery_metadata(key)),
                unfurl_links=False,
                unfurl_media=False,
            )
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            raise translate(exc, where) from exc
        ts = response.get("ts")
        if not isinstance(ts, str):
            raise TransientDeliveryError(f"{where}: Slack's answer had no ts")
        return ts

    async def _upload_to_thread(
        self, channel: ChannelRef, ts: str, content: Outgoing, attachment: Attachment
    ) -> None:
        """Upload ``attachment`` into the thread of the message ``ts`` (posted just now, or by an
        earlier attempt). A transient failure fails the delivery (the retry finds the message
        and uploads then); a permanent one leaves the chart out, since the message is out."""
        title = attachment.filename
        if not isinstance(content, Notice):
            title = f"Chart of {content.title}, as of update #{content.seq}"
        try:
            await self.upload(channel.channel, attachment, title=title, thread_ts=ts)
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            error = translate(exc, f"slack upload of {attachment.filename} to {channel}")
            if isinstance(error, TransientDeliveryError):
                raise error from exc
            log.warning("the message %s in %s went without its chart: %s", ts, channel, error)

    async def upload(
        self,
        channel_id: str,
        attachment: Attachment,
        *,
        title: str,
        thread_ts: str | None = None,
        comment: str | None = None,
    ) -> None:
        """Upload ``attachment`` and share it in the channel (in a thread with ``thread_ts``),
        with its description as the image's alt text. Raises what slack_sdk raises."""
        await self.client.files_upload_v2(
            channel=channel_id,
            content=attachment.data,
            filename=attachment.filename,
            title=file_title(title),
            alt_txt=alt_text(attachment.description),
            initial_comment=comment,
            thread_ts=thread_ts,
        )

    async def find_posted(self, channel: ChannelRef, key: str) -> HistoryMessage | None:
        """Our message carrying ``key`` among the channel's recent messages (its ``ts``, and
        who replied in its thread)."""
        try:
            response = await self.client.conversations_history(
                channel=channel.channel, include_all_metadata=True, limit=self._history_limit
            )
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            raise translate(exc, f"slack history of {channel}") from exc
        messages: list[HistoryMessage] = response.get("messages") or []
        for message in messages:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            ours = self.bot_id is None or message.get("bot_id") == self.bot_id
            if (
                ours
                and metadata.get("event_type") == METADATA_EVENT_TYPE
                and payload.get("key") == key
                and isinstance(message.get("ts"), str)
            ):
                return message
        return None

    async def edit(self, channel: ChannelRef, message_id: str, content: Outgoing) -> None:
        try:
            await self.client.chat_update(
                channel=channel.channel,
                ts=message_id,
                text=fallback_text(content),
                blocks=as_json(blocks_for(content)),
            )
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            raise translate(exc, f"slack edit of {message_id} in {channel}", editing=True) from exc

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
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            error = translate(exc, "the chart could not be posted here")
            log.warning("slack: %s", error)
            if isinstance(error, TransientDeliveryError):
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
