"""Which counts have a public page: a lookup the web layer is given, never decides itself.

Anything the lookup does not call public is answered exactly as a count that does not exist
(404), so the pages tell nobody which private counts there are. For now the lookup is built
from the configuration (``[[counts]] public = true``, :class:`ConfiguredPublic`); a store that
keeps who owns a count and whether it is public gives one of its own with the same method.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from bot.settings.counts import CountConfig


class PublicCounts(Protocol):
    """Whether a count may be shown to anyone."""

    async def is_public(self, count_id: str) -> bool: ...


class ConfiguredPublic:
    """The counts marked ``public = true`` in the configuration file."""

    def __init__(self, counts: Iterable[CountConfig]) -> None:
        self.ids = frozenset(c.count.id for c in counts if c.public)

    async def is_public(self, count_id: str) -> bool:
        return count_id in self.ids
