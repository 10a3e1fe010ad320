"""REST handlers for threads started on a message, and for pins, as Discord documents them.

- ``POST /channels/{id}/messages/{message_id}/threads``: needs Create Public Threads (403 50013
  without); the thread is a channel of type 11 whose id is the message's, with the parent's
  permission overwrites; a second start on the same message is 400 code 160004. A deleted
  message is 404 10008. The thread outlives its first message (Discord keeps it, "original
  message was deleted"); deleting the thread (``delete_thread``) makes posts in it 404 10003.
  Posting in a thread needs Send Messages in Threads (``rest.create_message``).
- ``PUT``/``DELETE /channels/{id}/messages/pins/{message_id}`` (the routes discord.py 2.7
  calls): need Pin Messages (403 50013 without); 204; the message's ``pinned`` follows.
"""

from __future__ import annotations

from .messaging import get_channel, get_message
from .models import CREATE_PUBLIC_THREADS, PIN_MESSAGES, Channel
from .payloads import channel as channel_payload
from .router import ApiError, Ctx, Reply, Route
from .state import FakeDiscord


async def start_thread(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    msg = get_message(fake, chan, ctx.params["message_id"])
    if chan.guild_id is not None and not fake.bot_permissions(chan.id) & CREATE_PUBLIC_THREADS:
        raise ApiError(403, 50013, "Missing Permissions")
    if msg.id in fake.channels:
        raise ApiError(400, 160004, "A thread has already been created for this message")
    body = ctx.body if isinstance(ctx.body, dict) else {}
    thread = Channel(
        msg.id,
        chan.guild_id,
        str(body.get("name") or "thread"),
        11,
        overwrites=list(chan.overwrites),
        parent_id=chan.id,
    )
    fake.channels[thread.id] = thread
    return Reply(201, channel_payload(thread))


async def pin(fake: FakeDiscord, ctx: Ctx) -> Reply:
    return _pin(fake, ctx, pinned=True)


async def unpin(fake: FakeDiscord, ctx: Ctx) -> Reply:
    return _pin(fake, ctx, pinned=False)


def _pin(fake: FakeDiscord, ctx: Ctx, *, pinned: bool) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    msg = get_message(fake, chan, ctx.params["message_id"])
    if chan.guild_id is not None and not fake.bot_permissions(chan.id) & PIN_MESSAGES:
        raise ApiError(403, 50013, "Missing Permissions")
    msg.pinned = pinned
    return Reply(204)


PINS = "/channels/{channel_id}/messages/pins/{message_id}"
ROUTES: list[Route] = [
    Route(
        "POST",
        "/channels/{channel_id}/messages/{message_id}/threads",
        start_thread,
        major="channel_id",
    ),
    Route("PUT", PINS, pin, major="channel_id"),
    Route("DELETE", PINS, unpin, major="channel_id"),
]
