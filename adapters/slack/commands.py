"""Slack commands: ``/count <text>`` is acknowledged at once and answered through ``respond()``
(the command's response_url, which Slack takes 5 times within 30 minutes):
ephemeral for errors and lists, in the channel for status and subscriptions. ``/count chart``
is answered with the PNG uploaded into the channel (the reply's text as its comment), or an
ephemeral error when it cannot be (the bot not in the channel, ``files:write`` missing). An
app_mention (``@tallybot status bessemer-2021``) is answered in a thread (ephemerally for
errors); an event Slack delivers again (same event_id) is handled once. Admin commands are
allowed for the configured user ids (checked by ``bot.commands``) and, unless turned off, for
admins and owners of the workspace the command comes from (users.info, cached a few minutes),
when the operator lists that workspace under ``[slack] admin_workspaces``
(``adapters.slack.admins``).

Every answer goes through the adapter's replies (``adapters.slack.answers``): paced with the
deliveries, ahead of them, a 429 waited out. One member's
commands in one channel are carried out in the order they arrived
(``bot.commands.inflight.InOrder``); while the bot stops a command is not acknowledged.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import aiohttp
from cachetools import LRUCache, TTLCache
from slack_bolt.async_app import AsyncAck, AsyncRespond
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.admins import SlackAdmins
from adapters.slack.answers import Respond, paced, say
from adapters.slack.blocks import file_comment, reply_payload
from adapters.slack.delivery import SLACK_LIMITS, SlackSender, translate
from adapters.slack.forms import CALLBACK_PREFIX, Submitted, modal_view, submitted
from adapters.slack.inbox import SlackInbox
from adapters.slack.mentions import SlackMentions, strip_mention
from adapters.slack.names import SlackNames
from adapters.slack.payloads import AppMention, EventCallback, SlashCommand, as_json
from adapters.slack.settings import SlackSettings
from bot.platform import (
    BUSY,
    Attachment,
    ChannelRef,
    Context,
    DeliveryError,
    Extra,
    InFlight,
    Platform,
    Reply,
    Request,
    TransientDeliveryError,
)

log = logging.getLogger(__name__)

PLATFORM = Platform("slack")
SUPPORTS = frozenset(Extra) - {Extra.PUBLISH}
"""The subscription options tallybot has on Slack (no announcement channels to publish in)."""


class _QuietTokenWarning(logging.Filter):
    """bolt warns that the token it read from SLACK_BOT_TOKEN is unused when it is given a
    client: true, and the client carries that very token. Not worth an operator's attention."""

    def filter(self, record: logging.LogRecord) -> bool:
        said = str(record.msg)
        return not said.startswith(("As you gave `client` as well", "As `installation_store` or"))


log.addFilter(_QuietTokenWarning())

INVITE_FIX = "invite the bot with /invite @tallybot"
SEEN_EVENTS = 2048
"""How many event ids are remembered to drop Slack's redeliveries (a bounded LRU)."""
ADMIN_LOOKUPS_KEPT = 4096
"""users.info answers remembered (per workspace and user, each for ``admin_cache_seconds``)."""


class SlackCommands(SlackSender):
    """``/count`` and mentions, answered through the core (``context.handle``); the delivery
    half is the base, the lifecycle the subclass (``SlackAdapter``)."""

    def __init__(
        self,
        client: AsyncWebClient,
        settings: SlackSettings,
        context: Context,
        *,
        admin_cache_seconds: float,
        history_limit: int,
        monotonic: Callable[[], float] | None = None,
        admin_lookups_kept: int = ADMIN_LOOKUPS_KEPT,
    ) -> None:
        """``monotonic``: the clock of the admin lookups' expiry (the context's by default)."""
        limits = SLACK_LIMITS.with_windows(settings.limits)
        super().__init__(client, limits=limits, history_limit=history_limit)
        self.config = settings
        self.context = context
        self.admins = SlackAdmins(settings)
        self.team_id: str | None = None
        self._admin_cache: TTLCache[tuple[str, str], bool, float] = TTLCache(
            admin_lookups_kept, admin_cache_seconds, timer=monotonic or context.clock.monotonic
        )
        self._seen_events: LRUCache[str, None] = LRUCache(SEEN_EVENTS)
        self.inflight = InFlight(backlog=context.backlog)

    async def _on_command(
        self, ack: AsyncAck, command: SlashCommand, respond: AsyncRespond
    ) -> None:
        if not self.inflight.accepting:
            return  # stopping: not acknowledged (Slack tells the member it failed)
        team = command.get("team_id")
        if not await self.inflight.order.admit(team):  # more than could be finished in time
            await ack(text=BUSY.text)
            return
        if not self.inflight.accepting:
            return  # stopped while it waited for room: not acknowledged
        channel = str(command.get("channel_id") or "")
        key = (team, channel, command.get("user_id"))
        place = self.inflight.order.place(key, team)  # before any await: the order they came in
        arrived = self.replies.monotonic()
        answer = paced(self.replies, respond, channel, arrived)
        try:
            await ack()
        except BaseException:
            place.leave()
            raise

        async def failed(reply: Reply) -> None:
            await answer(text=reply.text, response_type="ephemeral")

        text = str(command.get("text") or "")
        words = text.split()
        verb = words[0].lower() if words else ""
        if verb in self.context.verbs and self.context.verbs[verb].opens_form(words[1:]):
            # the verb alone (with the count, for a form about one): its form opens
            opening = self._open_form(command, answer, verb, text)
            await self.inflight.run(f"slack /count {verb} (form)", opening, failed, place=place)
            return

        what = f"slack /count {str(command.get('text') or '')[:200]!r}"
        await self.inflight.run(what, self._command(command, answer), failed, place=place)

    async def _command(self, command: SlashCommand, respond: Respond) -> None:
        text = str(command.get("text") or "")
        request = await self._request(
            team=command.get("team_id"),
            channel=str(command.get("channel_id") or ""),
            user=str(command.get("user_id") or ""),
            name=str(command.get("user_name") or command.get("user_id") or ""),
            text=text,
        )
        reply = await self.context.handle(request)
        if reply.attachment is not None and reply.ok and not reply.ephemeral:
            failed = await self._share(
                request.channel.workspace, request.channel.channel, reply, reply.attachment
            )
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

    async def _open_form(
        self, command: SlashCommand, respond: Respond, verb: str, text: str
    ) -> None:
        """Ask the core for the form ``text`` names and open it with the command's trigger_id;
        its refusal, privately, instead."""
        channel = str(command.get("channel_id") or "")
        request = await self._request(
            team=command.get("team_id"),
            channel=channel,
            user=str(command.get("user_id") or ""),
            name=str(command.get("user_name") or command.get("user_id") or ""),
            text=text,
            form=True,
        )
        reply = await self.context.handle(request)
        if reply.form is None:
            await respond(text=reply.text, response_type="ephemeral")
            return
        view = modal_view(reply.form, channel)
        try:
            client = await self.client_of(str(command.get("team_id") or ""))
            await client.views_open(trigger_id=str(command.get("trigger_id")), view=view)
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            log.warning("%s", translate(exc, f"slack views.open for /count {verb}"))
            usage = self.context.verbs[verb].usage_line()
            await respond(text=f"Error: the form did not open; {usage}", response_type="ephemeral")

    async def _on_view(self, ack: AsyncAck, body: dict[str, Any], view: dict[str, Any]) -> None:
        """A form submitted: its command line carried out; an error shown on its field, an
        answer sent to the channel it was opened in, to the person only."""
        verb = str(view.get("callback_id") or "").removeprefix(CALLBACK_PREFIX)
        form = self.context.verbs[verb].form if verb in self.context.verbs else None
        if form is None:
            await ack()
            return
        acked: list[bool] = []

        async def failed(reply: Reply) -> None:
            if not acked:
                errors = {form.field_for(reply.text).key: reply.text}
                await ack(response_action="errors", errors=errors)

        what = f"slack form /count {verb}"
        got = submitted(verb, form, view)
        await self.inflight.run(what, self._submitted(ack, acked, body, got), failed)

    async def _submitted(
        self, ack: AsyncAck, acked: list[bool], body: dict[str, Any], got: Submitted
    ) -> None:
        user = body.get("user") or {}
        channel, form = got.channel, got.opening.form
        team = str((body.get("team") or {}).get("id") or user.get("team_id") or "")
        request = await self._request(
            team=team,
            channel=channel,
            user=str(user.get("id") or ""),
            name=str(user.get("username") or user.get("id") or ""),
            text=got.line,
        )
        reply = await self.context.handle(request)
        acked.append(True)
        if not reply.ok:
            await ack(response_action="errors", errors={form.field_for(reply.text).key: reply.text})
            return
        await ack()
        text, blocks = reply_payload(reply)
        try:
            client = await self.client_of(team)
            await say(
                self.replies,
                "chat.postEphemeral",
                channel,
                lambda: client.chat_postEphemeral(
                    channel=channel,
                    user=request.user_id,
                    text=text,
                    blocks=as_json(blocks) if blocks else None,
                ),
            )
        except DeliveryError as exc:
            log.warning("slack form answer: %s", exc)

    async def _on_mention(self, body: EventCallback, event: AppMention) -> None:
        if not self.first_delivery(str(body.get("event_id") or "")):
            return
        if event.get("bot_id") or not event.get("user"):
            return
        channel, user = str(event.get("channel") or ""), str(event["user"])
        thread = event.get("thread_ts") or event.get("ts")
        team = str(body.get("team_id") or event.get("team") or "")

        async def failed(reply: Reply) -> None:
            client = await self.client_of(team)
            await say(
                self.replies,
                "chat.postEphemeral",
                channel,
                lambda: client.chat_postEphemeral(
                    channel=channel, user=user, text=reply.text, thread_ts=thread
                ),
            )

        what = f"slack mention {str(event.get('text') or '')[:200]!r}"
        await self.inflight.run(what, self._mention(body, event), failed)

    async def _mention(self, body: EventCallback, event: AppMention) -> None:
        user = str(event["user"])
        channel = str(event.get("channel") or "")
        team = str(body.get("team_id") or event.get("team") or "")
        bot = await self.workspaces.find(team) if self.workspaces else None
        request = await self._request(
            team=team,
            channel=channel,
            user=user,
            name=user,
            text=strip_mention(
                str(event.get("text") or ""), bot.bot_user_id if bot else self.bot_user_id
            ),
        )
        reply = await self.context.handle(request)
        thread = event.get("thread_ts") or event.get("ts")
        if reply.attachment is not None and reply.ok and not reply.ephemeral:
            failed = await self._share(team, channel, reply, reply.attachment, thread_ts=thread)
            if failed is None:
                return
            reply = failed
        text, blocks = reply_payload(reply)
        kwargs: dict[str, Any] = {"blocks": as_json(blocks) if blocks else None}
        client = bot.client if bot else self.client
        try:
            if reply.ephemeral:
                await say(
                    self.replies,
                    "chat.postEphemeral",
                    channel,
                    lambda: client.chat_postEphemeral(
                        channel=channel, user=user, text=text, thread_ts=thread, **kwargs
                    ),
                )
            else:
                await say(
                    self.replies,
                    "chat.postMessage",
                    channel,
                    lambda: client.chat_postMessage(
                        channel=channel, text=text, thread_ts=thread, unfurl_links=False, **kwargs
                    ),
                )
        except DeliveryError as exc:
            log.warning("slack mention reply: %s", exc)

    async def _share(
        self,
        team: str,
        channel: str,
        reply: Reply,
        attachment: Attachment,
        *,
        thread_ts: str | None = None,
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
                client=await self.client_of(team),
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

    async def client_of(self, team: str) -> AsyncWebClient:
        """The client for the workspace a command comes from: its own bot token with the OAuth
        flow, else the single one."""
        bot = await self.workspaces.find(team) if self.workspaces else None
        return bot.client if bot else self.client

    def first_delivery(self, event_id: str) -> bool:
        """False for an event id seen before (Slack's retries), remembering the latest ones."""
        if not event_id:
            return True
        seen = event_id in self._seen_events
        self._seen_events[event_id] = None  # the latest use, for the LRU
        return not seen

    async def _request(
        self, *, team: object, channel: str, user: str, name: str, text: str, form: bool = False
    ) -> Request:
        workspace = str(team or self.team_id or "")
        admin = False
        if self.admins.asks_platform(user) and self.context.verbs.needs_admin(text, form=form):
            admin = await self.is_workspace_admin(user, workspace)
        return self.context.request(
            ChannelRef(PLATFORM, workspace, channel),
            user,
            name,
            text.strip(),
            platform_admin=admin,
            supports=SUPPORTS,
            mentions=SlackMentions(),
            names=SlackNames(lambda: self.client_of(workspace), text),
            form=form,
            inbox=SlackInbox(lambda: self.client_of(workspace), self.replies, user),
        )

    async def is_workspace_admin(self, user_id: str, workspace: str) -> bool:
        """Whether users.info says the user is an admin or owner of ``workspace`` (cached, fails
        closed). A user from another workspace (a shared channel, another workspace of an
        organisation) is not, whatever their rights at home: the policy
        (``adapters.slack.admins``) then decides whether workspace admins count there."""
        key = (workspace, user_id)
        cached = self._admin_cache.get(key)
        if cached is not None:
            return cached
        try:
            client = await self.client_of(workspace)
            response = await client.users_info(user=user_id)
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            log.warning("slack users.info %s failed: %s", user_id, exc)
            return False
        user = response.get("user") or {}
        admin = user.get("team_id") == workspace and any(
            bool(user.get(k)) for k in ("is_admin", "is_owner", "is_primary_owner")
        )
        self._admin_cache[key] = admin
        return admin
