"""Which counts have a public page (a lookup the web layer is given, never decides itself),
and the link to it that chat messages carry (at the end).

Anything the lookup does not call public is answered exactly as a count that does not exist
(404), so the pages tell nobody which private counts there are. The running bot asks the store
(:class:`StorePublic`: the file's ``public = true`` and counts made public in chat);
:class:`ConfiguredPublic` answers from the file alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Protocol

from bot.domain.message import Timed
from bot.settings.counts import CountConfig
from bot.store import Database
from bot.store import counts as count_rows


class PublicCounts(Protocol):
    """Whether a count may be shown to anyone."""

    async def is_public(self, count_id: str) -> bool: ...


class ConfiguredPublic:
    """The counts marked ``public = true`` in the configuration file."""

    def __init__(self, counts: Iterable[CountConfig]) -> None:
        self.ids = frozenset(c.count.id for c in counts if c.public)

    async def is_public(self, count_id: str) -> bool:
        return count_id in self.ids


class StorePublic:
    """The counts the store calls public and not archived: the operator's marked ``public =
    true`` in the file, and those made public in chat (the default lookup)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def is_public(self, count_id: str) -> bool:
        async with self.db.connect() as conn:
            count = await count_rows.get(conn, count_id)
        return count is not None and count.public and not count.archived


# The link to a count's public page that chat messages carry (``status``, the final message).
#
# Only for a public count, and only when ``[web] public_url`` says where the public reaches the
# pages: a link to the bot's own listener (``127.0.0.1:8081``) would help nobody in chat. Kept
# apart from the server so that the commands and the pipeline need nothing of it but this.

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
