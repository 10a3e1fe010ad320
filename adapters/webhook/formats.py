"""The three bodies a target may take, each UTF-8 JSON (wire payloads as TypedDicts).

``json``, tallybot's own: for an update, the count's standing as ``GET /c/<id>.json`` serves it
(``bot.platform.standing``: every figure, the headline and sentences, the state, the count's
id and the update's number ``seq``), plus ``kind`` (``update``) and ``delivery``: the
idempotency ``key``, ``action`` (``post``, or ``edit`` of the message ``replaces``), the update's
``events`` and whether it is ``significant``; a final's chart, where it fits under the body
cap, as ``chart`` (base64 PNG and its alt text). An admin notice is ``kind`` ``notice`` with
its ``text``. Signed as the push API is (``X-Tallybot-Signature``).

``slack``: a Slack incoming webhook's ``{"text": ...}``, which Mattermost takes as it is: the
headline, then the figures and sentences as plain text in a code block; every text shown as
typed (:mod:`.text`).

``teams``: a message with one Adaptive Card (1.4), as Teams' Workflows ("When a Teams webhook
request is received") take it: the title, the headline, the figures as facts, the sentences
and the footer as text blocks.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any, Literal, NotRequired, TypedDict

from bot.platform import (
    Attachment,
    Message,
    Notice,
    Outgoing,
    clean,
    render,
    standing,
    standing_json,
)

from . import text

STATES = {"final": "Final", "paused": "Count paused", "counting": "Counting"}
"""A message's state and the words the page shows for it."""
CARD = "application/vnd.microsoft.card.adaptive"
CARD_SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"


class Delivery(TypedDict):
    key: str
    action: Literal["post", "edit"]
    replaces: str | None
    events: list[str]
    significant: bool


class Chart(TypedDict):
    media_type: str
    filename: str
    description: str
    base64: str


class NoticeBody(TypedDict):
    version: int
    kind: Literal["notice"]
    count_id: str | None
    text: str
    delivery: Delivery


class SlackBody(TypedDict):
    text: str


class CardAttachment(TypedDict):
    contentType: str
    contentUrl: None
    content: dict[str, Any]


class TeamsBody(TypedDict):
    type: Literal["message"]
    attachments: list[CardAttachment]
    summary: NotRequired[str]


def state_of(message: Message) -> str:
    """``final``, ``paused`` or ``counting``, as the message says."""
    if message.final:
        return "final"
    return "paused" if message.headline.startswith("Count paused") else "counting"


def observed(message: Message, now: datetime) -> datetime:
    """When the figures were observed: the footer's "as of" time (``now`` if it has none)."""
    moments = message.footer.moments
    return moments[0].at if moments else now


def delivery(key: str, content: Outgoing, replaces: str | None) -> Delivery:
    message = content if isinstance(content, Message) else None
    return {
        "key": key,
        "action": "edit" if replaces else "post",
        "replaces": replaces,
        "events": list(message.events) if message else [],
        "significant": message.significant if message else True,
    }


def json_body(
    content: Outgoing,
    *,
    key: str,
    replaces: str | None,
    now: datetime,
    page_base: str | None,
    chart: Attachment | None,
    cap: int,
) -> bytes:
    """tallybot's own JSON (see the module docstring); the chart only where it fits ``cap``."""
    how = delivery(key, content, replaces)
    if isinstance(content, Notice):
        notice: NoticeBody = {
            "version": 1,
            "kind": "notice",
            "count_id": content.count_id,
            "text": clean(content.text),
            "delivery": how,
        }
        return standing_json(dict(notice))
    state = state_of(content)
    url = f"{page_base.rstrip('/')}/c/{content.count_id}" if page_base else None
    doc = standing(
        content, state=state, state_text=STATES[state], updated=observed(content, now), url=url
    )
    doc.update(kind="update", delivery=how)
    body = standing_json(doc)
    if chart is None:
        return body
    shown: Chart = {
        "media_type": "image/png",
        "filename": chart.filename,
        "description": clean(chart.description),
        "base64": base64.b64encode(chart.data).decode(),
    }
    with_chart = standing_json({**doc, "chart": shown})
    return with_chart if len(with_chart) <= cap else body


def slack_body(content: Outgoing) -> bytes:
    """A Slack (or Mattermost) incoming webhook's body."""
    if isinstance(content, Notice):
        said = text.slack(content.text)
    else:
        said = f"{text.slack(content.headline)}\n```\n{text.slack(render(content))}\n```"
    body: SlackBody = {"text": said}
    return json.dumps(body, ensure_ascii=False).encode()


def _block(words: str, **style: Any) -> dict[str, Any]:
    return {"type": "TextBlock", "text": text.teams(words), "wrap": True, **style}


def teams_body(content: Outgoing) -> bytes:
    """A Teams Workflows webhook's body: a message with one Adaptive Card."""
    if isinstance(content, Notice):
        blocks = [_block(content.text)]
        summary = content.text
    else:
        facts = [
            {
                "title": text.teams(c.label),
                "value": text.teams(" ".join(f"{c.votes_text} ({c.share_text}) {c.note}".split())),
            }
            for c in content.choices
        ]
        blocks = [
            _block(content.title, weight="Bolder", size="Medium"),
            _block(content.headline),
            {"type": "FactSet", "facts": facts},
            *(_block(line) for line in content.lines),
            _block(str(content.footer), isSubtle=True, size="Small"),
        ]
        summary = content.headline
    card = {"$schema": CARD_SCHEMA, "type": "AdaptiveCard", "version": "1.4", "body": blocks}
    body: TeamsBody = {
        "type": "message",
        "summary": text.teams(summary)[:200],
        "attachments": [{"contentType": CARD, "contentUrl": None, "content": card}],
    }
    return json.dumps(body, ensure_ascii=False).encode()
