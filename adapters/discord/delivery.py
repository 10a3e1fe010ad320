"""The Discord adapter's delivery half: what the dispatcher calls, and Discord's limits and errors.

``DiscordSender`` (the base of ``DiscordAdapter``, which adds the lifecycle and the commands):

- ``post`` sends one embed (a ``Notice`` as plain content) with ``allowed_mentions`` none and
  ``nonce=key`` (discord.py always adds ``enforce_nonce``), so that a repeat of a send whose
  answer was lost is deduplicated by Discord for a few minutes: one message, not two. An
  attachment (the chart of a final tally) goes in the same request, as a file with its alt text
  and shown as the embed's image (``attachment://``), so the nonce covers it too. Refused for it
  (no Attach Files permission, too large), the message is sent again without it.
- Every post also carries its key where Discord keeps it: at the end of the embed's footer
  (``ref tb123``), or of a notice's content. Discord documents its nonce check only for "the
  past few minutes", so after ``dedup_window`` (``NONCE_TRUST_S``, well inside that) the
  dispatcher does not rely on it: ``find_posted`` reads the bot's own messages in the channel
  since the first attempt (GET /channels/{id}/messages, page after page) and matches the key.
- ``edit`` edits a live scoreboard without fetching it first (``get_partial_message().edit``).
- Errors are translated where they leave discord.py: a 429 (``RateLimited``, raised by
  discord.py instead of sleeping longer than ``max_ratelimit_timeout``) is ``RateLimited``; 5xx,
  timeouts and connection errors are ``TransientDeliveryError``; an unknown channel (10003), lost
  access (50001) or permissions (50013) are ``PermanentDeliveryError`` worded for an admin to act
  on; a scoreboard that is gone (10008) or can no longer be edited (30046, 50005) is
  ``MessageGone``.

Every request goes through the dispatcher's ``pace``, named by its route as discord.py names it
(``POST /channels/{channel_id}/messages``). ``DISCORD_LIMITS``: ``global``, 50 per second for
every request, Discord's documented global limit per bot (discord.py does not pace itself to
it: it only waits out a 429 after the fact); and per channel, 5 per 5 s each for creating,
editing and reading messages, the buckets Discord reports in its ``X-RateLimit-*`` headers
(observed; Discord does not document bucket sizes); and 10 per hour per channel for publishing
(``adapters.discord.announce``).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import time
from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

import aiohttp
from cachetools import LRUCache

from adapters.discord.announce import (
    PUBLISH_ROUTE,
    PUBLISH_WINDOW,
    PUBLISHES,
    DiscordAnnouncements,
)
from adapters.discord.embeds import clip, message_embed, notice_content
from adapters.discord.lib import discord
from adapters.discord.members import Members
from adapters.discord.mentions import NO_MENTIONS, role_ping
from adapters.discord.places import POST_ROUTE
from adapters.discord.ratelimits import GlobalWatch
from adapters.discord.text import plain
from bot.platform import (
    Attachment,
    Bucket,
    ChannelRef,
    DeliveryError,
    Earlier,
    Limits,
    LimitSaid,
    MessageGone,
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

log = logging.getLogger("adapters.discord")

EDIT_ROUTE = "PATCH /channels/{channel_id}/messages/{message_id}"
READ_ROUTE = "GET /channels/{channel_id}/messages"
DELETE_ROUTE = "DELETE /channels/{channel_id}/messages/{message_id}"
CALLBACK_ROUTE = "POST /interactions/{interaction_id}/{interaction_token}/callback"
FOLLOWUP_ROUTE = "/webhooks/{application_id}/{interaction_token}"
DM_ROUTE = "POST /users/@me/channels"
"""Opening a member's DM channel (``adapters.discord.inbox``), once per follow."""
"""The routes of a command's answer (``bot.delivery.replies``); their ``channel`` is the
interaction's id, whose token they use."""
GLOBAL = "global"
"""The bucket every request draws from, Discord's global limit per bot."""
DISCORD_LIMITS = Limits(
    routes={
        POST_ROUTE: (Bucket("messages per channel", Window(5, 5.0), per_channel=True),),
        EDIT_ROUTE: (Bucket("edits per channel", Window(5, 5.0), per_channel=True),),
        READ_ROUTE: (Bucket("reads per channel", Window(5, 5.0), per_channel=True),),
        DELETE_ROUTE: (Bucket("deletes per channel", Window(5, 5.0), per_channel=True),),
        PUBLISH_ROUTE: (Bucket(PUBLISHES, PUBLISH_WINDOW, per_channel=True),),
        # A command's answer: the interaction's first response, then follow-ups (and edits
        # or deletes of them) by the interaction's token, 5 per 5 s per token as for a
        # webhook (observed); neither counts toward the global limit.
        FOLLOWUP_ROUTE: (Bucket("follow-ups per interaction", Window(5, 5.0), per_channel=True),),
        # Opening DM channels is limited per bot (unpublished: the old "5 per 5 s" for DMs).
        DM_ROUTE: (Bucket("DM channels opened", Window(5, 5.0)),),
    },
    # 3 a second kept for the requests every instance on a shared store makes outside the
    # pacer (start-ups, shard logins, a follow's DM channel): bot.delivery.shared
    every=(Bucket(GLOBAL, Window(50, 1.0), reserved=3),),
    apart=frozenset({CALLBACK_ROUTE, FOLLOWUP_ROUTE}),
    # GET /users/@me and GET /oauth2/applications/@me (the REST client's login, and again for
    # each shard's client), GET /gateway/bot and the command sync (one PUT per guild; more
    # shards or guilds than this only cost a 429 that discord.py waits out).
    startup_requests=7,
)
"""What the dispatcher paces Discord requests by; ``[discord.limits]`` in the configuration
can change a bucket's window by name (Discord raises the global limit for large bots)."""
NONCE_TRUST_S = 60.0
"""How long after a first attempt a repeat relies on Discord's nonce check ("the past few
minutes"); later, the channel is read first."""
CLOCK_SKEW_S = 300.0
"""The channel is read from this long before the first attempt (clocks may disagree)."""
HISTORY_PAGE = 100  # messages per read, Discord's maximum
MAX_NONCE = 25
MAX_ALT_TEXT = 1024  # Discord's limit on an attachment's description (its alt text)
NAMES_KEPT = 1024  # names of deleted channels remembered for the notice about them
REINVITE = "Invite it again (tallybot invite --client-id ID prints the link), then subscribe again."
REF = re.compile(r"(?:^|\s)ref (\S+)$")
"""The delivery key at the end of a footer or of a notice (``ref tb123``)."""

# Discord JSON error codes (https://discord.com/developers/docs/topics/opcodes-and-status-codes)
UNKNOWN_CHANNEL = 10003
UNKNOWN_GUILD = 10004
UNKNOWN_MESSAGE = 10008
EDIT_LIMIT_OLD_MESSAGE = 30046
UNAUTHORIZED = 40001
MISSING_ACCESS = 50001
CANNOT_EDIT_OTHERS_MESSAGE = 50005
CANNOT_DM = 50007
"""The person blocked the bot, takes no DMs from the server's members, or shares no server."""
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


def key_in(message: dict[str, Any]) -> str | None:
    """The delivery key a message (as Discord's API returns it) carries, if any."""
    texts = [str((e.get("footer") or {}).get("text") or "") for e in message.get("embeds") or []]
    texts.append(str(message.get("content") or ""))
    for text in texts:
        found = REF.search(text.strip())
        if found is not None:
            return found.group(1)
    return None


class DiscordSender(DiscordAnnouncements):
    """Delivery on Discord (see the module docstring); ``open_client`` gives the discord.py
    client while the adapter is open."""

    platform = Platform("discord")
    dedup_window = NONCE_TRUST_S

    def __init__(self, limits: Limits = DISCORD_LIMITS) -> None:
        self.limits = limits
        self.publishes = limits.named()[PUBLISHES].window
        self._names: LRUCache[int, str] = LRUCache(NAMES_KEPT)
        self.members = Members(time.monotonic)
        """Who is still a member of a server (a DM of its private count); the adapter gives
        it the context's clock."""
        self._threads = set()
        self.global_429s = GlobalWatch(GLOBAL)
        """Tells the dispatcher of global 429s (``http_trace`` of discord.py's client)."""

    def watch_limits(self, said: LimitSaid) -> None:
        self.global_429s.said = said

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
        """Send one message; ``key`` is the nonce, so a repeat is deduplicated by Discord for a
        few minutes, and its footer's ``ref``, so that ``find_posted`` finds it later.

        With ``earlier`` there is nothing to send: the file went in the same request as the
        message, so the message found shows it (or was sent without it, refused)."""
        if earlier is not None:
            return earlier.message_id
        if channel.member is not None:  # a DM of the server's own private count: still in it?
            await self.members.check(self._live(), channel, pace, self.translate, FAILURES)
        if channel.thread is not None:
            return await self.post_in_thread(channel, content, key, pace, attachment)
        target = self._target(channel)
        route = Route(POST_ROUTE, channel.channel)
        if attachment is not None:
            async with pace(route, delivers=True):
                try:
                    return await self._send(target, content, key, attachment)
                except discord.HTTPException as exc:
                    if not _refused_for_the_file(exc):
                        raise self.translate(exc, channel) from exc
                    log.warning(
                        "%s: sending the message without its %s (%s); the bot needs Attach "
                        "Files there to show it",
                        self.describe(channel), attachment.filename, exc,
                    )  # fmt: skip
                except FAILURES as exc:
                    raise self.translate(exc, channel) from exc
        async with pace(route, delivers=True):
            try:
                return await self._send(target, content, key, None)
            except FAILURES as exc:
                raise self.translate(exc, channel) from exc

    async def _send(
        self,
        target: discord.PartialMessageable,
        content: Outgoing,
        key: str,
        attachment: Attachment | None,
    ) -> str:
        extra: dict[str, Any] = {}
        if attachment is not None:
            extra["file"] = discord_file(attachment)
        nonce = nonce_for(key)
        if isinstance(content, Notice):
            sent = await target.send(
                notice_content(content, ref=key),
                allowed_mentions=NO_MENTIONS,
                nonce=nonce,
                **extra,
            )
        else:
            embed = message_embed(content, ref=key)
            if attachment is not None:  # the chart inside the message's card, under the figures
                embed.set_image(url=f"attachment://{extra['file'].filename}")
            ping, allowed = role_ping(content)  # a subscription's role, on a call: else none
            sent = await target.send(
                ping, embed=embed, allowed_mentions=allowed, nonce=nonce, **extra
            )
        return str(sent.id)

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        """Replace a message posted before (a live scoreboard), without fetching it."""
        target = self._target(channel)
        try:
            message = target.get_partial_message(int(message_id))
        except ValueError:
            raise MessageGone(f"{channel}: {message_id!r} is not a Discord message id") from None
        async with pace(Route(EDIT_ROUTE, channel.channel), delivers=True):
            try:
                if isinstance(content, Notice):
                    await message.edit(
                        content=notice_content(content), embed=None, allowed_mentions=NO_MENTIONS
                    )
                else:
                    await message.edit(embed=message_embed(content), allowed_mentions=NO_MENTIONS)
            except FAILURES as exc:
                raise self.translate(exc, channel, editing=True) from exc

    async def delete(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        """Delete a message of the bot's (a rehearsal's); one already gone is deleted."""
        target = self._target(channel)
        if not message_id.isdigit():
            raise PermanentDeliveryError(f"{channel}: {message_id!r} is no message id")
        async with pace(Route(DELETE_ROUTE, channel.channel)):
            try:
                await self._live().http.delete_message(target.id, int(message_id))
            except discord.NotFound:
                return
            except FAILURES as exc:
                raise self.translate(exc, channel) from exc

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        """The bot's messages in ``channel`` that carry any of ``keys``: every message since
        ``since`` (less ``CLOCK_SKEW_S``), read oldest first, a page at a time, each paced."""
        wanted = set(keys)
        target = self._target(channel)
        client = self._live()
        me = client.user.id if client.user is not None else None
        self._check_history_readable(channel, target.id)
        after = discord.utils.time_snowflake(since - timedelta(seconds=CLOCK_SKEW_S))
        found: dict[str, Earlier] = {}
        while True:
            async with pace(Route(READ_ROUTE, channel.channel)):
                try:
                    page = await client.http.logs_from(target.id, HISTORY_PAGE, after=after)
                except FAILURES as exc:
                    raise self.translate(exc, channel) from exc
            for raw in page:
                message: dict[str, Any] = dict(raw)
                author = message.get("author") or {}
                key = key_in(message)
                if key in wanted and key not in found and int(author.get("id", 0)) == me:
                    shown = bool(message.get("attachments"))
                    found[key] = Earlier(str(message["id"]), with_attachment=shown)
            if len(page) < HISTORY_PAGE or wanted <= set(found):
                return found
            after = max(int(m["id"]) for m in page)

    def _check_history_readable(self, channel: ChannelRef, channel_id: int) -> None:
        """Without Read Message History Discord answers an empty list, which would read as
        "not posted" and double the post: refuse instead (when the cache knows)."""
        known = self.cached_channel(channel_id)
        if not isinstance(known, discord.abc.GuildChannel) or known.guild.me is None:
            return
        if not known.permissions_for(known.guild.me).read_message_history:
            raise PermanentDeliveryError(
                f"{self.describe(channel)}: the bot cannot read the channel's history, so it "
                "cannot tell whether an interrupted post went out: give it Read Message History"
            )

    def translate(
        self, exc: BaseException, channel: ChannelRef, *, editing: bool = False
    ) -> DeliveryError:
        """What a discord.py or network failure means for the dispatcher."""
        where = self.describe(channel)
        if isinstance(exc, discord.RateLimited):
            return RateLimited(
                f"{where}: rate limited by Discord for {exc.retry_after:.1f} s",
                retry_after=exc.retry_after,
            )
        if isinstance(exc, discord.HTTPException):
            status, code = exc.status, exc.code
            said = f"Discord answered {status}" + (f" (code {code})" if code else "")
            if status == 429:
                return RateLimited(
                    f"{where}: rate limited; {said}",
                    retry_after=retry_after_header(exc.response.headers),
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
                    f"{where} no longer exists (deleted?); {said}. Subscribe another channel",
                    cause="the channel no longer exists (deleted?)",
                    fix="Subscribe another channel.",
                )
            if code == UNKNOWN_GUILD or (code == MISSING_ACCESS and self.removed_from(channel)):
                return PermanentDeliveryError(
                    f"the bot is no longer in the server of {where} (it was removed); {said}",
                    cause="the bot was removed from the server",
                    fix=REINVITE,
                )
            if code == CANNOT_DM:
                return PermanentDeliveryError(
                    f"{where}: Discord will not deliver a direct message to this person "
                    f"(they blocked the bot, take no DMs, or share no server with it); {said}"
                )
            if code in (MISSING_ACCESS, MISSING_PERMISSIONS) or status == 403:
                return PermanentDeliveryError(
                    f"the bot lost access to {where}: give it View Channel, Send Messages "
                    f"and Embed Links there; {said}",
                    cause="the bot lost access to the channel",
                    fix="Give it View Channel, Send Messages and Embed Links there, then "
                    "subscribe again.",
                )
            if code == INVALID_FORM_BODY:
                return PermanentDeliveryError(
                    f"{where}: Discord refused the message as invalid; {said}: {exc.text}"
                )
            return PermanentDeliveryError(f"{where}: Discord refused the message; {said}")
        if isinstance(exc, aiohttp.ClientError | OSError | TimeoutError):
            return TransientDeliveryError(f"{where}: cannot reach Discord: {exc!r}")
        return TransientDeliveryError(f"{where}: {exc!r}")

    def removed_from(self, channel: ChannelRef) -> bool:
        """Whether the gateway says the bot is no longer in the channel's server (its shard
        runs here, is ready, and has no such guild): a kick, not a lost permission."""
        return False

    def cached_channel(self, channel_id: int) -> object | None:
        """The channel as discord.py's cache knows it (from the gateway), if it does."""
        client = self.open_client()
        return client.get_channel(channel_id) if client is not None else None

    def remember_channel_name(self, channel_id: int, name: str) -> None:
        self._names[channel_id] = name

    def describe(self, channel: ChannelRef) -> str:
        """``#name (server)`` when discord.py's cache knows the channel, else its id."""
        try:
            channel_id = int(channel.channel)
        except ValueError:
            return str(channel)
        found = self.cached_channel(channel_id)
        name = getattr(found, "name", None) or self._names.get(channel_id)
        if not name:
            return f"channel {channel_id}"
        guild = getattr(found, "guild", None)
        return f"#{name}" + (f" ({guild.name})" if guild is not None else "")


def _refused_for_the_file(exc: discord.HTTPException) -> bool:
    """Refused for its file: no Attach Files (403, 50013; also said without Send Messages, and
    then the retry without the file fails too), or too large (413, 40005)."""
    return (exc.status == 403 and exc.code == MISSING_PERMISSIONS) or (
        exc.status == 413 or exc.code == ENTITY_TOO_LARGE
    )
