"""The Slack wire payloads the adapter builds (Block Kit, message metadata) and reads (slash
commands, app_mention events, conversations.history messages).

Only the fields tallybot uses are declared. Incoming payloads are ``total=False``: Slack adds
fields over time and a missing one is read with ``.get``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

METADATA_EVENT_TYPE = "tallybot_delivery"
"""``metadata.event_type`` of every message the dispatcher posts (record-then-confirm)."""


# ------------------------------------------------------------------ Block Kit (built)


class PlainText(TypedDict):
    type: Literal["plain_text"]
    text: str
    emoji: NotRequired[bool]


class Mrkdwn(TypedDict):
    type: Literal["mrkdwn"]
    text: str
    verbatim: NotRequired[bool]
    """True: Slack does not auto-link URLs or channel names in the text."""


class HeaderBlock(TypedDict):
    type: Literal["header"]
    text: PlainText


TextObject = PlainText | Mrkdwn


class SectionBlock(TypedDict):
    type: Literal["section"]
    text: NotRequired[TextObject]
    fields: NotRequired[list[TextObject]]


class ContextBlock(TypedDict):
    type: Literal["context"]
    elements: list[TextObject]


Block = HeaderBlock | SectionBlock | ContextBlock


class DeliveryPayload(TypedDict):
    key: str


class DeliveryMetadata(TypedDict):
    """``metadata`` on chat.postMessage: the delivery key, found again in conversations.history."""

    event_type: str
    event_payload: DeliveryPayload


def delivery_metadata(key: str) -> DeliveryMetadata:
    return {"event_type": METADATA_EVENT_TYPE, "event_payload": {"key": key}}


def as_json(blocks: list[Block]) -> list[dict[str, Any]]:
    """Blocks as plain dicts, the type slack_sdk's signatures ask for."""
    return [dict(b) for b in blocks]


# ---------------------------------------------------------------------- incoming (read)


class SlashCommand(TypedDict, total=False):
    """The form fields of a slash command (Socket Mode payload or HTTP body)."""

    team_id: str
    channel_id: str
    channel_name: str
    user_id: str
    user_name: str
    command: str
    text: str
    response_url: str
    trigger_id: str


class AppMention(TypedDict, total=False):
    type: str
    user: str
    text: str
    channel: str
    ts: str
    thread_ts: str
    team: str
    bot_id: str


class EventCallback(TypedDict, total=False):
    """An Events API ``event_callback`` body (the same in Socket Mode and HTTP mode)."""

    team_id: str
    event_id: str
    event: AppMention


class HistoryMessage(TypedDict, total=False):
    """A message as conversations.history returns it (with ``include_all_metadata``); a thread's
    parent also says who replied in the thread (``reply_users``)."""

    ts: str
    bot_id: str
    app_id: str
    user: str
    metadata: dict[str, Any]
    reply_count: int
    reply_users: list[str]
