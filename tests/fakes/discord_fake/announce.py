"""REST handlers for announcement channels (type 5), as Discord documents Channel Following.

- ``POST /channels/{id}/followers`` with ``{"webhook_channel_id": target}``: the channel must be
  an announcement channel (else 400, code 50024 "Cannot execute action on this channel type");
  the target a text or announcement channel of a server the bot is in; the bot needs Manage
  Webhooks in the target (403, 50013). Discord makes a channel follower webhook (type 2) in
  the target and answers the followed channel ``{channel_id, webhook_id}``.
- ``DELETE /webhooks/{id}``: needs Manage Webhooks in the webhook's channel (403, 50013); an
  unknown webhook is 404, code 10015; 204. Deleting a follower webhook ends the follow.
- ``POST /channels/{id}/messages/{message_id}/crosspost``: publishes the message: an
  announcement channel's only (400, 50024); the bot's own message needs Send Messages, anyone
  else's Manage Messages; a message published already is 400, code 40033. Every following
  channel, server by server, gets a copy (flag IS_CROSSPOST, posted as the follower webhook,
  with a ``message_reference`` to the original, no ping: the source server's roles are not the
  follower's), with no request per follower. The original gets the flag CROSSPOSTED.
  Publishes are bounded per channel (``publish_limit`` per ``publish_window_s``, Discord's 10
  an hour), answered 429 beyond, the bucket's headers on every answer. ``hangs.hang(f"published
  {id}")`` holds the answer of a crosspost in channel ``id`` once it is carried out (the copies
  made): a bot killed then has published without knowing it.
"""

from __future__ import annotations

from dataclasses import replace

from .messaging import body_dict, get_channel, get_message, snowflake
from .models import (
    FLAG_CROSSPOSTED,
    FLAG_IS_CROSSPOST,
    MANAGE_MESSAGES,
    MANAGE_WEBHOOKS,
    SEND_MESSAGES,
    User,
    Webhook,
)
from .router import ApiError, Ctx, Reply, Route
from .state import FakeDiscord

ANNOUNCEMENT = 5
TEXT = 0
WRONG_TYPE = ApiError(400, 50024, "Cannot execute action on this channel type")


async def follow(fake: FakeDiscord, ctx: Ctx) -> Reply:
    source = get_channel(fake, ctx.params["channel_id"])
    if source.type != ANNOUNCEMENT:
        raise WRONG_TYPE
    raw = body_dict(ctx).get("webhook_channel_id")
    target = get_channel(fake, str(snowflake(raw, "webhook_channel_id")))
    if target.guild_id is None or target.type not in (TEXT, ANNOUNCEMENT):
        raise WRONG_TYPE
    if not fake.bot_permissions(target.id) & MANAGE_WEBHOOKS:
        raise ApiError(403, 50013, "Missing Permissions")
    hook = make_follower(fake, source.id, target.id)
    return Reply(200, {"channel_id": str(source.id), "webhook_id": str(hook.id)})


def make_follower(fake: FakeDiscord, source: int, target: int) -> Webhook:
    """The webhook that makes ``target`` follow the announcement channel ``source``."""
    src, dst = fake.channels[source], fake.channels[target]
    assert src.type == ANNOUNCEMENT
    assert src.guild_id is not None
    assert dst.guild_id is not None
    user = fake.snowflakes.next()
    fake.users[user] = User(user, f"{fake.guilds[src.guild_id].name} #{src.name}", bot=True)
    hook = Webhook(fake.snowflakes.next(), target, dst.guild_id, source, src.guild_id, user)
    fake.webhooks[hook.id] = hook
    return hook


async def delete_webhook(fake: FakeDiscord, ctx: Ctx) -> Reply:
    hook = fake.webhooks.get(snowflake(ctx.params["webhook_id"], "webhook_id"))
    if hook is None:
        raise ApiError(404, 10015, "Unknown Webhook")
    if not fake.bot_permissions(hook.channel_id) & MANAGE_WEBHOOKS:
        raise ApiError(403, 50013, "Missing Permissions")
    del fake.webhooks[hook.id]
    return Reply(204)


async def crosspost(fake: FakeDiscord, ctx: Ctx) -> Reply:
    chan = get_channel(fake, ctx.params["channel_id"])
    msg = get_message(fake, chan, ctx.params["message_id"])
    if chan.type != ANNOUNCEMENT:
        raise WRONG_TYPE
    needed = SEND_MESSAGES if msg.author_id == fake.bot_user_id else MANAGE_MESSAGES
    if not fake.bot_permissions(chan.id) & needed:
        raise ApiError(403, 50013, "Missing Permissions")
    if msg.flags & FLAG_CROSSPOSTED:
        raise ApiError(400, 40033, "This message has already been crossposted")
    msg.flags |= FLAG_CROSSPOSTED
    followers = sorted(
        (h for h in fake.webhooks.values() if h.source_channel_id == chan.id),
        key=lambda h: (h.guild_id, h.channel_id),
    )
    for hook in followers:  # server by server: Discord's work, not the bot's requests
        target = fake.channels.get(hook.channel_id)
        if target is None or target.deleted:
            continue
        fake.store_message(
            replace(
                msg,
                id=fake.snowflakes.next(),
                channel_id=hook.channel_id,
                author_id=hook.user_id,
                flags=FLAG_IS_CROSSPOST,
                nonce=None,
                mentions=[],
                mention_roles=[],
                mention_everyone=False,
                allowed_mentions=None,
                pinned=False,
                edits=[],
                message_reference={
                    "type": 1,
                    "channel_id": str(chan.id),
                    "guild_id": str(chan.guild_id),
                    "message_id": str(msg.id),
                },
                webhook_id=hook.id,
                created_at=fake.wall_time(),
                created_clock=fake.clock(),
            )
        )
    fake.notify()  # the copies are there (a test waiting for them need not wait for the answer)
    await fake.hangs.wait(f"published {chan.id}")
    return Reply(200, fake.message_json(msg))


ROUTES: list[Route] = [
    Route("POST", "/channels/{channel_id}/followers", follow, major="channel_id"),
    Route("DELETE", "/webhooks/{webhook_id}", delete_webhook, major="webhook_id"),
    Route(
        "POST",
        "/channels/{channel_id}/messages/{message_id}/crosspost",
        crosspost,
        major="channel_id",
        limits="publish",
    ),
]
