"""Who an id is in a Slack workspace, for replies (``bot.commands.request.Names``).

A reply that names a user (``admins add``) shows the name users.info gives (the ``users:read``
scope the admin check needs already): their display name, else their full name, else their
handle. A user group is not looked up (``usergroups:read`` is not asked for): it is named as
Slack wrote it in the command, ``<!subteam^S0123ABCD|@team>`` with the slash command's
``should_escape``, else by its id. Replies are plain text with ``&``, ``<`` and ``>`` escaped,
so a name is shown and pings nobody: only ``<@U…>`` or ``<!subteam^…>`` markup notifies, and a
reply never carries it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable

import aiohttp
from slack_sdk.errors import SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.platform import Names

log = logging.getLogger(__name__)

LABELLED = re.compile(r"<(@|!subteam\^)([A-Z0-9]{2,32})\|@?([^>]{1,80})>")
"""A user or a user group as a slash command with ``should_escape`` gets it, with its label."""


class SlackNames(Names):
    """The users of the workspace a command comes from, and the groups named in its text."""

    def __init__(self, client: Callable[[], Awaitable[AsyncWebClient]], text: str) -> None:
        """``client``: the workspace's client (asked only when a user is named)."""
        self._client = client
        self._labels = {m[2]: m[3] for m in LABELLED.finditer(text)}

    async def user(self, user_id: str) -> str | None:
        try:
            client = await self._client()
            response = await client.users_info(user=user_id)
        except (SlackClientError, aiohttp.ClientError, OSError) as exc:
            log.warning("slack: who user %s is could not be asked: %s", user_id, exc)
            return self._labels.get(user_id)
        user = response.get("user") or {}
        profile = user.get("profile") or {}
        for name in (profile.get("display_name"), profile.get("real_name"), user.get("name")):
            if isinstance(name, str) and name.strip():
                return name.strip()
        return self._labels.get(user_id)

    async def group(self, group_id: str) -> str | None:
        return self._labels.get(group_id)
