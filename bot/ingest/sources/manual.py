"""Manual entry: tallies typed in by an admin with a bot command, so nothing is polled.

Config (``kind = "manual"``)::

    [counts.source]
    kind = "manual"
    name = "manual"     # optional, default "manual"; goes into Tally.source
"""

from __future__ import annotations

from bot.base.lifecycle import Closing
from bot.domain.model import Tally


class ManualSource(Closing):
    """A source that is never polled: :meth:`fetch` always returns None."""

    polled = False

    def __init__(self, name: str = "manual") -> None:
        self.name = name

    async def fetch(self) -> Tally | None:
        """Always None: manual tallies arrive through commands, not through the source."""
        return None

    def forget(self) -> None:
        """Nothing to forget: a manual source remembers nothing."""
