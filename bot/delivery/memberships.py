"""Whether a person is still a member of a place, asked by its platform before a DM of that
place's own count when the count is not public (``ChannelRef.member``, named by
``bot.store.sight.member_of``).

Following confers nothing outside the place the follow was made in: a member who left a Discord
server but shares another with the bot, or left a Telegram group but keeps their private chat
with it, can still be sent DMs, so the platform asks first (Discord ``GET
/guilds/{id}/members/{user}``, Telegram ``getChatMember``), paced with the DM. A yes is believed
for ``KEEP_S`` (the injected clock), so a fan-out of one update to many followers asks once per
member, not once per message; a no refuses the DM for good (:class:`PermanentDeliveryError`):
the courier unfollows them once, as one who blocked the bot (``bot.delivery.courier``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from cachetools import LRUCache

from bot.domain.subscription import ChannelRef
from bot.errors import PermanentDeliveryError

KEEP_S = 600.0
"""How long a yes is believed (10 minutes)."""
KEPT = 65_536
"""Yeses kept at most (the oldest go first)."""

Ask = Callable[[str, str], Awaitable[str | None]]
"""The platform's question about (place, person): None while they are a member of the place,
else where they are no longer one, and why ("server 1, whose count it is (code 10007)")."""


class Memberships:
    """The check, with its yeses kept per (place, person)."""

    def __init__(self, monotonic: Callable[[], float], keep_s: float = KEEP_S) -> None:
        self.monotonic = monotonic
        self.keep_s = keep_s
        self._yes: LRUCache[tuple[str, str], float] = LRUCache(KEPT)

    async def check(self, channel: ChannelRef, ask: Ask) -> None:
        """Return when ``channel.member`` (if any) is a member of ``channel.workspace``; raise
        :class:`PermanentDeliveryError` when ``ask`` says they are not."""
        member = channel.member
        if member is None:
            return
        key = (channel.workspace, member)
        until = self._yes.get(key)
        if until is not None and self.monotonic() < until:
            return
        gone = await ask(channel.workspace, member)
        if gone is not None:
            self._yes.pop(key, None)
            raise PermanentDeliveryError(
                f"{channel}: user {member} is no longer a member of {gone}"
            )
        self._yes[key] = self.monotonic() + self.keep_s
