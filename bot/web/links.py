"""The link to a count's public page that chat messages carry (``status``, the final message).

Only for a public count, and only when ``[web] public_url`` says where the public reaches the
pages: a link to the bot's own listener (``127.0.0.1:8081``) would help nobody in chat. Kept
apart from the server so that the commands and the pipeline need nothing of it but this.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.domain.message import Timed
from bot.web.public import PublicCounts

PageLink = Callable[[str], Awaitable[str | None]]
"""A count's page address by count id; None: it has none to give."""


async def no_link(count_id: str) -> str | None:
    """No page (no ``[web]`` table, or no ``public_url``)."""
    return None


def page_link(public: PublicCounts, public_url: str | None) -> PageLink:
    """The links under ``public_url`` (none without it) for the counts ``public`` allows."""
    if not public_url:
        return no_link

    async def link(count_id: str) -> str | None:
        return f"{public_url}/c/{count_id}" if await public.is_public(count_id) else None

    return link


def link_note(url: str) -> Timed:
    """The sentence that carries the link (a note of the message)."""
    return Timed.of(f"Live page: {url}")
