"""Manual entry: tallies typed in by an admin with a bot command, so nothing is polled.

Config (``kind = "manual"``)::

    [counts.source]
    kind = "manual"
    name = "manual"     # optional, default "manual"; goes into Tally.source
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from bot.domain.model import Tally


class ManualSource:
    """A source that is never polled: :meth:`fetch` always returns None."""

    polled = False

    def __init__(self, name: str = "manual") -> None:
        self.name = name

    async def __aenter__(self) -> Self:
        """Nothing to open."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Nothing to close."""

    async def fetch(self) -> Tally | None:
        """Always None: manual tallies arrive through commands, not through the source."""
        return None
