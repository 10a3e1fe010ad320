"""The outbox: the durable queue of messages to post or edit on the platforms.

A delivery moves PENDING -> SENDING -> SENT. A failed send goes back to PENDING with a later
``next_attempt_at`` (:func:`mark_retry`) or ends as DEAD (:func:`mark_dead`); a PENDING delivery
made pointless by a newer one ends as SUPERSEDED; one whose subscription was removed or disabled
ends as CANCELLED (:func:`cancel_for_subscription`, :func:`cancel_orphans`, and
:func:`mark_attempt` at the last moment). SENT, SUPERSEDED, CANCELLED and DEAD are final: the
store refuses to change a finished delivery, except that a CANCELLED one whose request was
already on its way is recorded as SENT when it arrived (that is what the channel shows).

A delivery still SENDING when the bot starts was cut off mid-send (:func:`in_doubt`); if its
``sending_at`` is set, its request may have reached the platform.
"""

from bot.store.outbox.claims import claimable, release_expired, renew
from bot.store.outbox.moves import (
    cancel_for_subscription,
    cancel_orphans,
    give_way,
    hold,
    mark_attempt,
    mark_attempts,
    mark_dead,
    mark_retry,
    mark_sending,
    mark_sent,
    mark_sent_many,
    release,
    revise,
    supersede,
    unmark_attempt,
)
from bot.store.outbox.queue import (
    OPEN,
    Delivery,
    DeliveryAction,
    DeliveryStatus,
    NewDelivery,
    alerts_since,
    dead,
    depth,
    due,
    enqueue,
    get,
    in_doubt,
    next_due,
    open_updates,
    pending_alerts,
    published_since,
    waiting_channels,
)

__all__ = [
    "OPEN",
    "Delivery",
    "DeliveryAction",
    "DeliveryStatus",
    "NewDelivery",
    "alerts_since",
    "cancel_for_subscription",
    "cancel_orphans",
    "claimable",
    "dead",
    "depth",
    "due",
    "enqueue",
    "get",
    "give_way",
    "hold",
    "in_doubt",
    "mark_attempt",
    "mark_attempts",
    "mark_dead",
    "mark_retry",
    "mark_sending",
    "mark_sent",
    "mark_sent_many",
    "next_due",
    "open_updates",
    "pending_alerts",
    "published_since",
    "release",
    "release_expired",
    "renew",
    "revise",
    "supersede",
    "unmark_attempt",
    "waiting_channels",
]
