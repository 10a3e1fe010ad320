"""Which due deliveries are worth sending: a newer message for the same channel may cover them."""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.outbox import Delivery, DeliveryAction

POSTS = (DeliveryAction.POST, DeliveryAction.REPLY)
"""New messages (in the channel, or in a subscription's thread): the latest routine one wins."""


def coalesce(due: Sequence[Delivery]) -> tuple[list[Delivery], list[Delivery]]:
    """Split due deliveries into those to send and those a newer one makes pointless.

    A routine post is dropped when a newer post (routine or significant) for the same
    subscription is also due: the newer one shows the latest state. A live-scoreboard edit is
    dropped when a newer edit of the same scoreboard is due. Significant posts and admin
    notices are never dropped, and a final tally is always significant.
    """
    newest_post: dict[int, int] = {}
    newest_edit: dict[int, int] = {}
    for d in due:
        if d.subscription_id is None:
            continue
        if d.action in POSTS:
            newest_post[d.subscription_id] = max(newest_post.get(d.subscription_id, 0), d.id)
        elif d.action is DeliveryAction.EDIT_LIVE:
            newest_edit[d.subscription_id] = max(newest_edit.get(d.subscription_id, 0), d.id)
    send: list[Delivery] = []
    drop: list[Delivery] = []
    for d in due:
        sub = d.subscription_id
        stale = sub is not None and (
            (d.action in POSTS and not d.significant and newest_post[sub] != d.id)
            or (d.action is DeliveryAction.EDIT_LIVE and newest_edit[sub] != d.id)
        )
        (drop if stale else send).append(d)
    return send, drop
