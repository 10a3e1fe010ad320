"""The Slack adapter's delivery half: what the dispatcher calls, and Slack's limits and errors.

``SlackSender`` posts (Block Kit, with the delivery key in the message metadata), edits live
scoreboards, finds earlier posts (``find_posted``) and uploads a final's chart into the thread
of its message; ``SlackAdapter`` (``adapters.slack``) adds the lifecycle and the commands.
Every request goes through the ``pace`` the dispatcher gives, named by its Web API method;
``SLACK_LIMITS`` says which buckets each method draws from. See ``adapters.slack`` for the
whole story (exactly once, charts).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.platform import (
    Adapter,
    Attachment,
    Bucket,
    ChannelRef,
    DeliveryError,
    Earlier,
    Limits,
    Message,
    MessageGone,
    NotAllowedHere,
    Notice,
    Outgoing,
    Pace,
    PermanentDeliveryError,
    Platform,
    RateLimited,
    Route,
    TransientDeliveryError,
    Window,
    retry_after_header,
    unpaced,
)

from .blocks import alt_text, blocks_for, fallback_text, file_title
from .payloads import METADATA_EVENT_TYPE, HistoryMessage, as_json, delivery_metadata
from .workspaces import Speaker, Workspaces

log = logging.getLogger("tallybot.slack")

RESPOND = "response_url"
RESPOND_IN_CHANNEL = "response_url in_channel"
"""The routes of a command's answer through its response_url (ephemeral, or in the channel)."""
SLACK_LIMITS = Limits(
    routes={
        "chat.postMessage": (
            # Slack documents a workspace-wide limit on chat.postMessage above the per-channel
            # one without giving a number (docs.slack.dev/apis/web-api/rate-limits, "Special
            # tier"). 5 per second (300 a minute, spread evenly) is our conservative choice.
            Bucket("chat.postMessage", Window(5, 1.0)),
            # "Posting messages: 1 per second" per channel, short bursts allowed but not
            # guaranteed to be displayed (same page). No bursts here.
            Bucket("chat.postMessage per channel", Window(1, 1.0), per_channel=True),
        ),
        # Tiers count per method per workspace: Tier 3 is "50+ per minute", Tier 4 "100+".
        "chat.update": (Bucket("chat.update", Window(50, 60.0)),),
        "chat.delete": (Bucket("chat.delete", Window(50, 60.0)),),
        "conversations.history": (Bucket("conversations.history", Window(50, 60.0)),),
        "conversations.replies": (Bucket("conversations.replies", Window(50, 60.0)),),
        # Commands' answers (bot.delivery.replies): through a command's response_url (Slack
        # names no rate for it, only 5 uses in 30 minutes), an answer in the channel is a
        # message there like a post; chat.postEphemeral is Tier 4, "100+ per minute".
        RESPOND_IN_CHANNEL: (
            Bucket("chat.postMessage per channel", Window(1, 1.0), per_channel=True),
        ),
        "chat.postEphemeral": (Bucket("chat.postEphemeral", Window(100, 60.0)),),
        # Opening a member's DM for a follow (adapters.slack.inbox): Tier 3.
        "conversations.open": (Bucket("conversations.open", Window(50, 60.0)),),
        # Tier 2: "20+ per minute".
        "pins.add": (Bucket("pins.add", Window(20, 60.0)),),
        "pins.remove": (Bucket("pins.remove", Window(20, 60.0)),),
        "files.getUploadURLExternal": (Bucket("files.getUploadURLExternal", Window(100, 60.0)),),
        "files.completeUploadExternal": (
            Bucket("files.completeUploadExternal", Window(100, 60.0)),
        ),
    },
)
"""What the dispatcher paces Slack requests by; ``[slack.limits]`` in the configuration can
change a bucket's window by name."""
INVITE_FIX = "invite the bot with /invite @tallybot"
GONE_ERRORS = frozenset(
    {"message_not_found", "cant_update_message", "edit_window_closed", "thread_not_found"}
)
SETTLED_PIN = frozenset({"already_pinned", "no_pin", "message_not_found"})
"""pins.add / pins.remove answers that leave the message as wanted (or gone)."""
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
MAX_ALT_TEXT = 1000
"""The longest image description (alt_txt) Slack takes for an upload."""


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
        wait = retry_after_header(exc.response.headers)
        # refused: slack_sdk retries nothing here (no retry handlers), so nothing was posted
        return RateLimited(f"{where}: rate limited by Slack (429)", retry_after=wait, refused=True)
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
    if error in AUTH_ERRORS:  # the app removed from the workspace, or its token revoked
        return PermanentDeliveryError(
            f"{where}: Slack refused the bot's token ({error}): check SLACK_BOT_TOKEN, or "
            "install the app in that workspace again",
            cause=f"Slack refused the bot's token ({error})",
            fix="Check SLACK_BOT_TOKEN, or install the app in the workspace again; then "
            "subscribe the channels again.",
        )
    return PermanentDeliveryError(f"{where}: Slack refused the request ({error})")


class SlackSender(Adapter):
    """Delivery on Slack through ``client`` (see the module docstring). ``bot_id`` and
    ``bot_user_id`` (from auth.test) tell the bot's own messages and thread replies apart."""

    platform = Platform("slack")
    dedup_window = 0.0
    """Slack drops no repeated post: one that may have gone out is always looked for first."""
    charts_apart = True  # a final's chart is uploaded into its message's thread, after it
    http: aiohttp.ClientSession | None = None
    """The one HTTP session (a pool of kept-alive connections) of every Web API call and upload,
    from :meth:`open_sender` to :meth:`close_sender`. slack_sdk's clients otherwise open a new
    session, and so a new TCP connection, for every call."""

    def __init__(
        self, client: AsyncWebClient, *, limits: Limits = SLACK_LIMITS, history_limit: int = 200
    ) -> None:
        self.client = client
        self.limits = limits
        self.bot_user_id: str | None = None
        self.bot_id: str | None = None
        self.workspaces: Workspaces | None = None
        """With the OAuth flow, the bot of each workspace (``adapters.slack.workspaces``);
        None: ``client`` and the ids above everywhere (single-token mode)."""
        self._history_limit = history_limit

    async def speaker(self, team_id: str, where: str) -> Speaker:
        """The bot that speaks in the workspace ``team_id`` (raises ``DeliveryError``)."""
        if self.workspaces is None:
            return Speaker(self.client, self.bot_id, self.bot_user_id, None)
        return await self.workspaces.speaker(team_id, where)

    def open_sender(self) -> aiohttp.ClientSession:
        """Open :attr:`http` (its timeout the client's) and give it to ``client``; the clients
        made from now on take it too (``SlackAdapter``). Returns it."""
        if self.http is None or self.http.closed:
            self.http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.client.timeout)
            )
        self.client.session = self.http
        return self.http

    async def close_sender(self) -> None:
        """Close :attr:`http` (a client still holding it then opens a session per call)."""
        http, self.http = self.http, None
        if http is not None:
            await http.close()

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        where = f"slack post to {channel}"
        bot = await self.speaker(channel.workspace, where)
        if earlier is None:
            ts = await self._post_message(bot.client, channel, content, key, where, pace)
        else:
            ts = earlier.message_id
            log.info("%s: %s was already posted as %s", where, key, ts)
            if attachment is not None and earlier.with_attachment:
                log.info("%s: its %s was already uploaded too", where, attachment.filename)
                return ts
        if attachment is not None:
            await self._upload_to_thread(
                bot.client, channel, channel.thread or ts, content, attachment, pace
            )
        return ts

    async def _post_message(
        self,
        client: AsyncWebClient,
        channel: ChannelRef,
        content: Outgoing,
        key: str,
        where: str,
        pace: Pace,
    ) -> str:
        # A reply into the thread when the place is one; a final shows in the channel too.
        final = isinstance(content, Message) and content.final
        async with pace(Route("chat.postMessage", channel.channel), delivers=True):
            try:
                response = await client.chat_postMessage(
                    channel=channel.channel,
                    text=fallback_text(content),
                    blocks=as_json(blocks_for(content)),
                    metadata=dict(delivery_metadata(key)),
                    unfurl_links=False,
                    unfurl_media=False,
                    thread_ts=channel.thread,
                    reply_broadcast=final if channel.thread is not None else None,
                )
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, where, editing=channel.thread is not None) from exc
        ts = response.get("ts")
        if not isinstance(ts, str):
            raise TransientDeliveryError(f"{where}: Slack's answer had no ts")
        return ts

    async def show_chart(
        self, channel: ChannelRef, message_id: str, content: Outgoing, attachment: Attachment,
        *, pace: Pace = unpaced,
    ) -> None:  # fmt: skip
        bot = await self.speaker(channel.workspace, f"slack chart for {channel}")
        ts = channel.thread or message_id
        await self._upload_to_thread(bot.client, channel, ts, content, attachment, pace, shows=True)

    async def _upload_to_thread(
        self,
        client: AsyncWebClient,
        channel: ChannelRef,
        ts: str,
        content: Outgoing,
        attachment: Attachment,
        pace: Pace,
        *,
        shows: bool = False,
    ) -> None:
        """Upload ``attachment`` into the thread of the message ``ts`` (posted just now, or by an
        earlier attempt; ``shows``: as a delivery of its own, see ``upload``). A transient
        failure fails the delivery (the retry finds the message and uploads then); a permanent
        one leaves the chart out, since the message is out."""
        title = attachment.filename
        if not isinstance(content, Notice):
            title = f"Chart of {content.title}, as of update #{content.seq}"
        try:
            await self.upload(
                channel.channel, attachment, title=title, thread_ts=ts, pace=pace, client=client,
                shows=shows,
            )  # fmt: skip
        except (PermanentDeliveryError, MessageGone) as error:
            log.warning("the message %s in %s went without its chart: %s", ts, channel, error)

    async def upload(
        self,
        channel_id: str,
        attachment: Attachment,
        *,
        title: str,
        thread_ts: str | None = None,
        comment: str | None = None,
        pace: Pace = unpaced,
        client: AsyncWebClient | None = None,
        shows: bool = False,
    ) -> None:
        """Upload ``attachment`` and share it in the channel (in a thread with ``thread_ts``),
        with its description as the image's alt text: files.getUploadURLExternal, the bytes to
        the URL it gives, files.completeUploadExternal, each paced (``shows``: the last one
        carries a delivery out, ``delivers=True``). Raises ``DeliveryError``."""
        where = f"slack upload of {attachment.filename} to {channel_id}"
        client = client or self.client
        async with pace(Route("files.getUploadURLExternal", channel_id)):
            try:
                got = await client.files_getUploadURLExternal(
                    filename=attachment.filename,
                    length=len(attachment.data),
                    alt_txt=alt_text(attachment.description),
                )
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, where) from exc
        url, file_id = got.get("upload_url"), got.get("file_id")
        if not isinstance(url, str) or not isinstance(file_id, str):
            raise TransientDeliveryError(f"{where}: Slack's answer had no upload_url")
        await self._send_file(url, attachment.data, where)
        async with pace(Route("files.completeUploadExternal", channel_id), delivers=shows):
            try:
                await client.files_completeUploadExternal(
                    files=[{"id": file_id, "title": file_title(title)}],
                    channel_id=channel_id,
                    initial_comment=comment,
                    thread_ts=thread_ts,
                )
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, where) from exc

    async def _send_file(self, url: str, data: bytes, where: str) -> None:
        """The bytes of an upload to the URL files.getUploadURLExternal gave (not a Web API
        method: no tier applies)."""
        http = self.open_sender() if self.http is None else self.http
        try:
            async with http.post(url, data=data) as response:
                status = response.status
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise TransientDeliveryError(f"{where}: no answer ({type(exc).__name__})") from exc
        if status == 429 or status >= 500:
            raise TransientDeliveryError(f"{where}: Slack failed the upload ({status})")
        if status != 200:
            raise PermanentDeliveryError(f"{where}: Slack refused the upload ({status})")

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        """Our messages carrying any of ``keys`` among the channel's latest ``history_limit``
        (one conversations.history read; in a thread, conversations.replies), with whether the
        bot replied in their thread (where a final's chart goes; in a thread, whether a file
        of ours follows the message there). ``since`` is not used: Slack's ts and our clock
        may disagree."""
        wanted = set(keys)
        bot = await self.speaker(channel.workspace, f"slack history of {channel}")
        method = "conversations.history" if channel.thread is None else "conversations.replies"
        async with pace(Route(method, channel.channel)):
            try:
                if channel.thread is None:
                    response = await bot.client.conversations_history(
                        channel=channel.channel,
                        include_all_metadata=True,
                        limit=self._history_limit,
                    )
                else:  # a thread's replies (and its parent)
                    response = await bot.client.conversations_replies(
                        channel=channel.channel,
                        ts=channel.thread,
                        include_all_metadata=True,
                        limit=self._history_limit,
                    )
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, f"slack history of {channel}", editing=True) from exc
        messages: list[HistoryMessage] = response.get("messages") or []
        found: dict[str, Earlier] = {}
        for message in messages:
            metadata = message.get("metadata") or {}
            key = (metadata.get("event_payload") or {}).get("key")
            ts = message.get("ts")
            ours = bot.bot_id is None or message.get("bot_id") == bot.bot_id
            if (
                ours
                and metadata.get("event_type") == METADATA_EVENT_TYPE
                and key in wanted
                and key not in found
                and isinstance(ts, str)
            ):
                if channel.thread is None:
                    replied = bot.bot_user_id in (message.get("reply_users") or [])
                else:  # a reply has no thread of its own: its chart follows it in this one
                    replied = any(
                        later.get("files") and ts_after(later.get("ts"), ts)
                        and (bot.bot_id is None or later.get("bot_id") == bot.bot_id)
                        for later in messages
                    )  # fmt: skip
                found[key] = Earlier(ts, with_attachment=replied)
        return found

    async def pin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        await self._pin("pins.add", channel, message_id, pace)

    async def unpin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        await self._pin("pins.remove", channel, message_id, pace)

    async def _pin(self, method: str, channel: ChannelRef, ts: str, pace: Pace) -> None:
        """pins.add / pins.remove (the app needs pins:write); refused, ``NotAllowedHere``."""
        bot = await self.speaker(channel.workspace, f"slack {method} in {channel}")
        async with pace(Route(method, channel.channel)):
            try:
                call = bot.client.pins_add if method == "pins.add" else bot.client.pins_remove
                await call(channel=channel.channel, timestamp=ts)
            except SlackApiError as exc:
                error = str(exc.response.get("error") or "")
                if error in SETTLED_PIN:
                    return
                if error in ("missing_scope", "not_allowed", "restricted_action"):
                    raise NotAllowedHere(f"Slack answered {error} to {method}") from exc
                raise translate(exc, f"slack {method} in {channel}") from exc
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, f"slack {method} in {channel}") from exc

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        where = f"slack edit of {message_id} in {channel}"
        bot = await self.speaker(channel.workspace, where)
        async with pace(Route("chat.update", channel.channel), delivers=True):
            try:
                await bot.client.chat_update(
                    channel=channel.channel,
                    ts=message_id,
                    text=fallback_text(content),
                    blocks=as_json(blocks_for(content)),
                )
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, where, editing=True) from exc

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """chat.delete of a message of the bot's (a rehearsal's); one already gone is deleted."""
        where = f"slack delete of {message_id} in {channel}"
        bot = await self.speaker(channel.workspace, where)
        async with pace(Route("chat.delete", channel.channel)):
            try:
                await bot.client.chat_delete(channel=channel.channel, ts=message_id)
            except SlackApiError as exc:
                if exc.response.get("error") == "message_not_found":
                    return
                raise translate(exc, where) from exc
            except (SlackClientError, aiohttp.ClientError, OSError) as exc:
                raise translate(exc, where) from exc


def ts_after(ts: object, than: str) -> bool:
    """Whether the Slack ts ``ts`` is later than ``than`` ("1712345678.000200")."""
    if not isinstance(ts, str):
        return False
    try:  # seconds and microseconds apart: a float would round them together
        return tuple(map(int, ts.split("."))) > tuple(map(int, than.split(".")))
    except ValueError:
        return False
