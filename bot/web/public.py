"""Which counts have a public page: a lookup the web layer is given, never decides itself.

Anything the lookup does not call public is answered exactly as a count that does not exist
(404), so the pages tell nobody which private counts there are. The running bot asks the store
(:class:`StorePublic`: the file's ``public = true`` and counts made public in chat);
:class:`ConfiguredPublic` answers from the file alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

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
