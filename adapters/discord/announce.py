"""Discord announcement channels (type 5): publishing a message to every channel that follows
one, and making a channel follow one.

- ``crosspost``: ``POST /channels/{id}/messages/{message_id}/crosspost`` (discord.py's
  ``publish_message``): Discord copies the message into every following channel, server by
  server, with no request per follower. Discord allows about 10 publishes per channel per hour
  (``PUBLISH_WINDOW``, the bucket ``publishes per channel`` of ``DISCORD_LIMITS``, which
  ``[discord.limits]`` may change). A message published already answers 400, code 40033: a
  repeat after a lost answer, done. Not an announcement channel (50024), no right to (50001,
  50013): ``NotAllowedHere``; the message gone (10008): ``MessageGone``. discord.py refuses
  (``RateLimited``) every request of a bucket whose reset is further away than
  ``max_ratelimit_timeout`` (30 s), even with requests left in it: after one publish, the
  channel's bucket resets an hour later, so the next publish would wait an hour. Each crosspost
  is therefore a bucket of its own for discord.py (a ``metadata`` of its own on the route), and
  the pacer alone paces publishing; a 429 still comes back as ``RateLimited``.
- :class:`DiscordFollows`: ``/count subscribe <count> via=#channel`` in a server's channel makes
  it follow the operator's announcement channel for the count (``POST /channels/{id}/followers``
  with ``webhook_channel_id``: Discord makes a webhook in the follower channel), when the
  operator lets that channel be followed for that count (``[discord] announcements``) and the
  bot has Manage Webhooks in the follower channel (as the interaction says). The follow is the
  only thing a member of another server can have the bot do in the operator's server.
  ``unsubscribe`` deletes that webhook (``DELETE /webhooks/{id}``), which ends the follow.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from adapters.discord.lib import discord
from adapters.discord.places import DiscordPlaces
from bot.platform import (
    ChannelRef,
    CommandError,
    Follows,
    NotAllowedHere,
    Pace,
    RateLimited,
    Replies,
    Route,
    Window,
    unpaced,
)

PUBLISH_ROUTE = "POST /channels/{channel_id}/messages/{message_id}/crosspost"
FOLLOW_ROUTE = "POST /channels/{channel_id}/followers"
UNHOOK_ROUTE = "DELETE /webhooks/{webhook_id}"
PUBLISHES = "publishes per channel"
PUBLISH_WINDOW = Window(10, 3600.0)
"""Discord's bound on publishing, per announcement channel (about 10 an hour)."""
ALREADY_CROSSPOSTED = 40033
WRONG_CHANNEL_TYPE = 50024  # "Cannot execute action on this channel type"
_REQUESTS = itertools.count()
TOKEN_S = 15 * 60.0  # an interaction's token: the follow is part of its answer
MANAGE_WEBHOOKS = (
    "tallybot needs Manage Webhooks in this channel to follow an announcement channel: give it "
    "that permission here, then subscribe again"
)


class DiscordAnnouncements(DiscordPlaces):
    """Publishing, for the sender (see the module docstring)."""

    async def crosspost(
        self, channel: ChannelRef, message_id: str, *, pace: Pace = unpaced
    ) -> None:
        http = self._live().http
        route = discord.http.Route(
            "POST",
            "/channels/{channel_id}/messages/{message_id}/crosspost",
            channel_id=int(channel.channel),
            message_id=int(message_id),
            metadata=f"tallybot {next(_REQUESTS)}",  # a discord.py bucket of its own
        )
        async with pace(Route(PUBLISH_ROUTE, channel.channel), delivers=True):
            try:
                await http.request(route)
            except discord.HTTPException as exc:
                if exc.code == ALREADY_CROSSPOSTED:
                    return  # an earlier attempt published it
                if exc.code == WRONG_CHANNEL_TYPE:
                    raise NotAllowedHere("it is not an announcement channel (any more)") from exc
                raise self._refusal(exc, channel, "publish the message") from exc
            except (discord.DiscordException, OSError, TimeoutError) as exc:
                raise self.translate(exc, channel) from exc


class DiscordFollows(Follows):
    """Channel following from the channel of ``interaction`` (see the module docstring);
    ``announcements``: the operator's announcement channel of each count that may be followed;
    ``replies``: where the requests go (they answer a command)."""

    def __init__(
        self,
        interaction: discord.Interaction[Any],
        announcements: Mapping[str, int],
        replies: Replies,
    ) -> None:
        self.interaction = interaction
        self.announcements = announcements
        self.replies = replies

    async def follow(self, count_id: str, announcement: str) -> str:
        allowed = self.announcements.get(count_id)
        if allowed is None:
            raise CommandError(
                f"{count_id} has no announcement channel to follow: subscribe without via="
            )
        if str(allowed) != announcement:
            raise CommandError(f"#{announcement} is not {count_id}'s: use via=#{allowed}")
        ix = self.interaction
        if ix.guild_id is None or ix.channel_id is None:
            raise CommandError("via= makes a server's channel follow: not a direct message")
        if ix.channel_id == allowed:
            raise CommandError("this is the announcement channel itself: subscribe with publish")
        if not ix.app_permissions.manage_webhooks:
            raise CommandError(MANAGE_WEBHOOKS)
        http = ix.client.http
        target = ix.channel_id
        try:
            data = await self._send(
                Route(FOLLOW_ROUTE, str(allowed)),
                lambda: http.follow_webhook(allowed, target, reason=f"tallybot: {count_id}"),
            )
        except discord.HTTPException as exc:
            if exc.status == 403:
                raise CommandError(MANAGE_WEBHOOKS) from exc
            if exc.code in (10003, WRONG_CHANNEL_TYPE):
                raise CommandError(
                    f"#{allowed} cannot be followed now (code {exc.code}): tell the operator"
                ) from exc
            raise CommandError(f"Discord refused the follow (code {exc.code}): try later") from exc
        if not isinstance(data, dict) or data.get("webhook_id") is None:
            raise CommandError("Discord did not say what it made for the follow: try later")
        return str(data["webhook_id"])

    async def unfollow(self, made: str) -> str | None:
        http = self.interaction.client.http
        route = discord.http.Route("DELETE", "/webhooks/{webhook_id}", webhook_id=int(made))
        try:
            await self._send(Route(UNHOOK_ROUTE, made), lambda: http.request(route))
        except discord.NotFound:
            return None  # removed already
        except discord.HTTPException as exc:
            why = "it needs Manage Webhooks here" if exc.status == 403 else f"code {exc.code}"
            return (
                f"tallybot could not end the follow ({why}): remove it in this channel's "
                "settings (Integrations, Channels Followed)"
            )
        return None

    async def _send(self, route: Route, request: Callable[[], Awaitable[Any]]) -> Any:
        async def once() -> Any:
            try:
                return await request()
            except discord.RateLimited as exc:
                raise RateLimited(
                    f"Discord rate limited {route.method} for {exc.retry_after:.1f} s",
                    retry_after=exc.retry_after,
                ) from exc

        return await self.replies.send(route, once, within=TOKEN_S)
