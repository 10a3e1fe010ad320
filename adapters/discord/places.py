"""Threads and pins on Discord: the base of ``DiscordSender`` (``adapters.discord.delivery``).

- A thread place (``ChannelRef.thread``, a subscription's ``thread``) is the thread Discord
  starts on that message: ``POST /channels/{id}/messages/{message_id}/threads`` once (the thread
  has the message's id; "already has a thread", code 160004, is fine), then posts go to the
  thread as to a channel, each with its key as nonce and ``ref``, so a retry is found in the
  thread (``find_posted`` on the place reads the thread). A final is posted in the channel
  too (with the ping, if the subscription has one: the thread's copy pings nobody). The message
  gone (10008) or the thread gone (10003) is ``MessageGone``; no right to
  start or post in threads (50001, 50013) is ``NotAllowedHere``.
- ``pin``/``unpin``: ``PUT``/``DELETE /channels/{id}/messages/pins/{message_id}`` (discord.py
  2.7's routes), which need Pin Messages; refused, ``NotAllowedHere``.
"""

from __future__ import annotations

from dataclasses import replace

from adapters.discord.lib import discord
from bot.platform import (
    Adapter,
    Attachment,
    ChannelRef,
    DeliveryError,
    Message,
    MessageGone,
    NotAllowedHere,
    Outgoing,
    Pace,
    PermanentDeliveryError,
    Route,
    unpaced,
)

POST_ROUTE = "POST /channels/{channel_id}/messages"
THREAD_ROUTE = "POST /channels/{channel_id}/messages/{message_id}/threads"
PIN_ROUTE = "PUT /channels/{channel_id}/messages/pins/{message_id}"
UNPIN_ROUTE = "DELETE /channels/{channel_id}/messages/pins/{message_id}"
THREAD_NAME = "Updates"
HAS_THREAD = 160004
GONE = (10003, 10008)  # unknown channel (the thread), unknown message (its parent)
REFUSED = (50001, 50013)  # missing access, missing permissions


class DiscordPlaces(Adapter):
    """Threads and pins; ``open_client``, ``_send`` and ``translate`` are the sender's."""

    _threads: set[int]
    """Threads known to exist (started, or found started): no second start request."""

    def open_client(self) -> discord.Client | None:
        """The discord.py client, while the adapter is open."""
        raise NotImplementedError

    async def _send(
        self,
        target: discord.PartialMessageable,
        content: Outgoing,
        key: str,
        attachment: Attachment | None,
    ) -> str:
        raise NotImplementedError

    def translate(
        self, exc: BaseException, channel: ChannelRef, *, editing: bool = False
    ) -> DeliveryError:
        raise NotImplementedError

    def _live(self) -> discord.Client:
        client = self.open_client()
        if client is None:
            raise RuntimeError("the Discord adapter is not open")
        return client

    def _target(self, channel: ChannelRef) -> discord.PartialMessageable:
        """The channel, or the thread when the place is one."""
        try:
            channel_id = int(channel.thread or channel.channel)
        except ValueError:
            raise PermanentDeliveryError(f"{channel}: not a Discord channel id") from None
        guild_id = int(channel.workspace) if channel.workspace.isdigit() else None
        kind = (
            discord.ChannelType.text
            if channel.thread is None
            else discord.ChannelType.public_thread
        )
        return self._live().get_partial_messageable(channel_id, guild_id=guild_id, type=kind)

    def _refusal(self, exc: BaseException, channel: ChannelRef, what: str) -> DeliveryError:
        if isinstance(exc, discord.HTTPException):
            if exc.code in GONE:
                return MessageGone(f"{channel}: the message or its thread is gone ({exc.code})")
            if exc.code in REFUSED or exc.status == 403:
                return NotAllowedHere(f"Discord refused to {what} ({exc.code})")
        return self.translate(exc, channel)

    async def post_in_thread(
        self,
        place: ChannelRef,
        content: Outgoing,
        key: str,
        pace: Pace,
        attachment: Attachment | None,
    ) -> str:
        """Post into the thread on ``place.thread`` (started first if need be); a final is
        posted in the channel too, with the chart."""
        assert place.thread is not None
        await self._open_thread(place, pace)
        final = isinstance(content, Message) and content.final
        # A final's ping goes with its copy in the channel: one ping, not two.
        here = replace(content, mention=None) if isinstance(content, Message) and final else content
        async with pace(Route(POST_ROUTE, place.thread), delivers=True):
            try:
                message_id = await self._send(self._target(place), here, key, None)
            except (discord.DiscordException, OSError, TimeoutError) as exc:
                raise self._refusal(exc, place, "post in the thread") from exc
        if final:
            channel = replace(place, thread=None)
            async with pace(Route(POST_ROUTE, channel.channel), delivers=True):
                try:
                    await self._send(self._target(channel), content, f"{key}c", attachment)
                except (discord.DiscordException, OSError, TimeoutError) as exc:
                    raise self.translate(exc, channel) from exc
        return message_id

    async def _open_thread(self, place: ChannelRef, pace: Pace) -> None:
        assert place.thread is not None
        thread = int(place.thread)
        if thread in self._threads:
            return
        async with pace(Route(THREAD_ROUTE, place.channel)):
            try:
                await self._live().http.start_thread_with_message(
                    int(place.channel),
                    thread,
                    name=THREAD_NAME,
                    auto_archive_duration=10080,  # a week without posts
                )
            except discord.HTTPException as exc:
                if exc.code != HAS_THREAD:
                    raise self._refusal(exc, place, "start a thread") from exc
            except (discord.DiscordException, OSError, TimeoutError) as exc:
                raise self.translate(exc, place) from exc
        self._threads.add(thread)

    async def pin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        await self._pin(channel, message_id, pace, PIN_ROUTE)

    async def unpin(self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced) -> None:
        await self._pin(channel, message_id, pace, UNPIN_ROUTE)

    async def _pin(self, channel: ChannelRef, message_id: str, pace: Pace, route: str) -> None:
        http = self._live().http
        call = http.pin_message if route == PIN_ROUTE else http.unpin_message
        async with pace(Route(route, channel.channel)):
            try:
                await call(int(channel.channel), int(message_id))
            except (discord.DiscordException, OSError, TimeoutError) as exc:
                if isinstance(exc, discord.HTTPException) and exc.code in GONE:
                    return  # nothing left to pin or unpin
                raise self._refusal(exc, channel, "pin the scoreboard") from exc
