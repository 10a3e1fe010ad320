"""A person following a count: what a channel's subscription is, sent to one person's direct
messages instead (``follow <count> [final|calls|leads|events|close=N|N%]``).

A follow hears in the subscriptions' own grammar (a :class:`~bot.domain.subscription.Wants`,
parsed and shown by the same code as ``subscribe``'s), less what only a channel has (``live``,
``all``, ``mention``, ``thread``, ``pin``); its default is ``calls``. It is keyed by the
platform and the person (one follow of a count per person on a platform, wherever they typed
it) and keeps the place it was made in: the count was visible there, and following confers
nothing elsewhere. As a recipient (:attr:`Follow.recipient`) it is a subscription whose channel
is the person's DM channel (``inbox``), marked ``direct``: the planner, the outbox and the
dispatcher treat it as any channel, and its deliveries are ``DeliveryAction.DIRECT``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.domain.subscription import ChannelRef, Hear, Platform, Subscription, Wants

DEFAULT = Wants(frozenset({Hear.CALLS}))
"""What ``follow <count>`` alone hears."""
CHANNEL_ONLY = "live, all, mention, thread and pin are for channels (subscribe)"


def refused(wants: Wants) -> str | None:
    """Why a follow cannot hear ``wants`` (what only a channel has), or None."""
    if wants.live or Hear.ALL in wants.hears or wants.mention is not None:
        return CHANNEL_ONLY
    if wants.thread or wants.pin:
        return CHANNEL_ONLY
    return None


@dataclass(frozen=True, slots=True)
class Follow:
    id: int
    platform: Platform
    user_id: str
    count_id: str
    place: ChannelRef
    """Where it was made (the server, workspace or chat, and the channel)."""
    inbox: str
    """The person's direct-message channel on the platform (a Telegram private chat is the
    person's id)."""
    wants: Wants
    created_at: datetime

    @property
    def dm(self) -> ChannelRef:
        """Where its messages go: the DM channel, in the place it was made (a Slack DM is sent
        with that workspace's token)."""
        return ChannelRef(self.platform, self.place.workspace, self.inbox)

    @property
    def recipient(self) -> Subscription:
        """The follow as the planner sees a subscription (``direct``)."""
        return Subscription(
            id=self.id,
            channel=self.dm,
            count_id=self.count_id,
            wants=self.wants,
            created_by=f"{self.platform}:{self.user_id}",
            created_at=self.created_at,
            direct=True,
        )
