"""How the answers to Slack commands reach Slack: through the adapter's replies
(``bot.delivery.replies``), on the routes ``SLACK_LIMITS`` names for them.

A slash command is answered through its response_url (bolt's ``respond``), which Slack takes 5
times within 30 minutes of the command (``RESPONSE_URL_S``) and documents no rate for: an
answer shown in the channel is paced as a message there (``RESPOND_IN_CHANNEL``), an ephemeral
one only waits its turn. A response_url answers a 429 with a status, not an exception: it is
made a ``RateLimited`` here, so that the replies wait it out and send the answer again. Answers
by the Web API (``chat.postEphemeral``, ``chat.postMessage``) go the same way (:func:`say`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
from slack_bolt.async_app import AsyncRespond
from slack_sdk.errors import SlackClientError
from slack_sdk.webhook.webhook_response import WebhookResponse

from adapters.slack.delivery import RESPOND, RESPOND_IN_CHANNEL, translate
from bot.platform import RateLimited, Replies, Route, retry_after_header

RESPONSE_URL_S = 30 * 60.0
"""A command's response_url takes answers this long after the command."""
T = TypeVar("T")
Respond = Callable[..., Awaitable[WebhookResponse]]
"""bolt's ``respond``, paced (:func:`paced`)."""


def paced(replies: Replies, respond: AsyncRespond, channel: str, arrived: float) -> Respond:
    """``respond`` of a command that ``arrived`` (by ``replies.monotonic``) in ``channel``,
    through ``replies``: paced, a 429 waited out while the response_url lasts."""

    async def answer(**payload: Any) -> WebhookResponse:
        in_channel = payload.get("response_type") == "in_channel"
        route = Route(RESPOND_IN_CHANNEL if in_channel else RESPOND, channel)

        async def once() -> WebhookResponse:
            try:
                said = await respond(**payload)
            except (aiohttp.ClientError, OSError) as exc:
                raise translate(exc, f"slack answer in {channel}") from exc
            if said.status_code == 429:
                raise RateLimited(
                    f"slack answer in {channel}: rate limited by Slack (429)",
                    retry_after=retry_after_header(said.headers),
                )
            return said

        return await replies.send(route, once, since=arrived, within=RESPONSE_URL_S)

    return answer


async def say(replies: Replies, route: str, channel: str, call: Callable[[], Awaitable[T]]) -> T:
    """One Web API call (``route``: its method) that answers a command in ``channel``, through
    ``replies``; its failure translated."""

    async def once() -> T:
        try:
            return await call()
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            raise translate(exc, f"slack {route} in {channel}") from exc

    return await replies.send(Route(route, channel), once)
