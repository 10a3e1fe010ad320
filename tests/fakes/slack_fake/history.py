"""conversations.history: which messages a channel shows, in which page, with thread info."""

from __future__ import annotations

import base64
from decimal import Decimal

from .args import JsonDict, cursor_ts, int_arg, truthy, ts_arg
from .limits import SlackError
from .records import RecordedSlackMessage
from .workspace import Channel, Workspace


def conversations_history(ws: Workspace, args: JsonDict) -> JsonDict:
    """conversations.history: newest first, paged by cursor, thread replies folded in."""
    channel = ws.find_channel(args.get("channel"))
    if not channel.is_member:
        raise SlackError("not_in_channel")
    oldest = ts_arg(args.get("oldest"), error="invalid_ts_oldest") or Decimal(0)
    latest = ts_arg(args.get("latest"), error="invalid_ts_latest")
    inclusive = truthy(args.get("inclusive"))
    with_metadata = truthy(args.get("include_all_metadata"))
    limit = int_arg(args.get("limit"), default=100)
    limit = max(1, min(limit, 999))
    cursor = cursor_ts(args.get("cursor"))
    selected = [m for m in _visible(channel) if _in_range(m, oldest, latest, inclusive)]
    selected.sort(key=lambda m: Decimal(m.ts), reverse=True)
    if cursor is not None:
        selected = [m for m in selected if Decimal(m.ts) < cursor]
    page, rest = selected[:limit], selected[limit:]
    out: JsonDict = {
        "messages": [
            {
                **m.to_api(team_id=ws.team_id, app_id=ws.app_id, with_metadata=with_metadata),
                **_thread_summary(channel, m),
            }
            for m in page
        ],
        "has_more": bool(rest),
        "pin_count": 0,
    }
    if rest:
        token = base64.b64encode(f"next_ts:{page[-1].ts}".encode()).decode()
        out["response_metadata"] = {"next_cursor": token}
    return out


def _visible(channel: Channel) -> list[RecordedSlackMessage]:
    return [
        m
        for m in channel.messages
        if not m.deleted and (m.thread_ts is None or m.thread_ts == m.ts or m.broadcast)
    ]


def _thread_summary(channel: Channel, parent: RecordedSlackMessage) -> JsonDict:
    """What conversations.history shows of a parent's thread: reply count and repliers."""
    replies = [
        m
        for m in channel.messages
        if not m.deleted and m.thread_ts == parent.ts and m.ts != parent.ts
    ]
    if not replies:
        return {}
    users = list(dict.fromkeys(m.user for m in replies))
    return {
        "thread_ts": parent.ts,
        "reply_count": len(replies),
        "reply_users_count": len(users),
        "reply_users": users,
        "latest_reply": replies[-1].ts,
    }


def _in_range(
    message: RecordedSlackMessage, oldest: Decimal, latest: Decimal | None, inclusive: bool
) -> bool:
    ts = Decimal(message.ts)
    if inclusive:
        return ts >= oldest and (latest is None or ts <= latest)
    return ts > oldest and (latest is None or ts < latest)
