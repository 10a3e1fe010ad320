"""Threads and pins, as Slack documents them (and where it is silent, as said here).

- chat.postMessage with ``thread_ts`` posts a reply; with ``reply_broadcast`` it also shows in
  the channel (conversations.history lists it). A ``thread_ts`` naming a deleted message is
  ``thread_not_found`` (Slack documents that error for conversations.replies; for
  chat.postMessage it is this fake's assumption: a bot must be told its parent is gone). One
  naming a message the fake never saw (a user's, sent as an event only) is taken as is.
- conversations.replies: the parent and its replies, oldest first (``thread_not_found``
  without a parent).
- pins.add / pins.remove: ``already_pinned`` / ``no_pin``; a message that is not there,
  ``message_not_found``.
"""

from __future__ import annotations

from .args import JsonDict, int_arg, truthy
from .limits import SlackError
from .records import RecordedSlackMessage
from .workspace import Channel, Workspace


def parent_of(channel: Channel, thread_ts: object) -> RecordedSlackMessage:
    for message in channel.messages:
        if message.ts == thread_ts and not message.deleted:
            return message
    raise SlackError("thread_not_found")


def check_parent(channel: Channel, thread_ts: object) -> None:
    """chat.postMessage's check: a deleted parent is ``thread_not_found``."""
    if any(m.ts == thread_ts and m.deleted for m in channel.messages):
        raise SlackError("thread_not_found")


def conversations_replies(ws: Workspace, args: JsonDict) -> JsonDict:
    channel = ws.find_channel(args.get("channel"))
    if not channel.is_member:
        raise SlackError("not_in_channel")
    parent = parent_of(channel, args.get("ts"))
    replies = [
        m
        for m in channel.messages
        if not m.deleted and m.thread_ts == parent.ts and m.ts != parent.ts
    ]
    limit = max(1, min(int_arg(args.get("limit"), default=1000), 1000))
    page = [parent, *replies][:limit]
    with_metadata = truthy(args.get("include_all_metadata"))
    return {
        "messages": [
            m.to_api(team_id=ws.team_id, app_id=ws.app_id, with_metadata=with_metadata)
            for m in page
        ],
        "has_more": len(replies) + 1 > limit,
    }


def pins_add(ws: Workspace, args: JsonDict) -> JsonDict:
    message = ws.find_message(ws.writable_channel(args.get("channel")), args.get("timestamp"))
    if message.pinned:
        raise SlackError("already_pinned")
    message.pinned = True
    return {}


def pins_remove(ws: Workspace, args: JsonDict) -> JsonDict:
    message = ws.find_message(ws.writable_channel(args.get("channel")), args.get("timestamp"))
    if not message.pinned:
        raise SlackError("no_pin")
    message.pinned = False
    return {}
