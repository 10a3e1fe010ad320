"""The pieces of ``subscribe`` (``bot.commands.builtin``): what the options need of the platform,
the words for what a subscription hears, the first scoreboard and the audit of a mention."""

from __future__ import annotations

from dataclasses import replace

from bot.commands.request import Request
from bot.commands.verbs import Call
from bot.domain import format as fmt
from bot.domain.model import Count, Tally
from bot.domain.subscription import Extra, Hear, Subscription, Wants
from bot.errors import CommandError
from bot.store.audit import AuditEntry
from bot.store.outbox import DeliveryAction, NewDelivery

POSTS = {
    Hear.EVENTS: "significant events",
    Hear.ALL: "every change",
    Hear.FINAL: "the final result",
    Hear.CALLS: "calls (a side clinching, a call withdrawn, the final)",
    Hear.LEADS: "every change of leader",
    Hear.REMIND: "a reminder before the count starts or resumes",
}


async def checked_wants(wants: Wants, request: Request) -> Wants:
    """``wants`` as stored: its mention resolved to the platform's id. A :class:`CommandError`
    when the platform has no such option, or the person may not have that group pinged."""
    platform = str(request.channel.platform).capitalize()
    for on, extra in ((wants.thread, Extra.THREAD), (wants.pin, Extra.PIN)):
        if on and extra not in request.supports:
            raise CommandError(f"{extra} is not supported on {platform}; leave it out")
    if wants.pin and not wants.live:
        raise CommandError("pin pins the live scoreboard: add live (subscribe <count> live pin)")
    if wants.mention is None:
        return wants
    if request.mentions is None or Extra.MENTION not in request.supports:
        raise CommandError(f"mention is not supported on {platform}; leave it out")
    return replace(wants, mention=await request.mentions.resolve(wants.mention))


def describe(wants: Wants, pinged: str | None = None) -> str:
    """What a subscription hears, in words: ``a live scoreboard plus significant events``;
    ``pinged``: who its ``mention`` is, by name (:func:`bot.commands.request.group_called`)."""
    posts = [POSTS[h] for h in POSTS if h in wants.hears]
    if wants.close is not None:
        close = wants.close
        limit = f"{close.votes:,} votes" if close.votes is not None else str(close)[6:]
        posts.append(f"every update while the margin is at most {limit}")
    if wants.hears == {Hear.EVENTS} and wants.close is None and not wants.live:
        text = "significant events only"
    else:
        text = ", ".join(posts[:-1]) + (" and " if len(posts) > 1 else "") + posts[-1]
        if wants.live:
            text = f"a live scoreboard plus {text}"
    extras = []
    if wants.mention is not None:
        extras.append(f"pinging {pinged or f'@{wants.mention}'} on calls and the final")
    if wants.thread:
        extras.append("updates in a thread, the final in the channel too")
    if wants.pin:
        extras.append("the scoreboard pinned while counting")
    return "; ".join([text, *extras])


def scoreboard(call: Call, sub_id: int, count: Count, last: Tally) -> NewDelivery:
    """The first live scoreboard of a new ``live`` subscription: the count as it stands."""
    return NewDelivery(
        subscription_id=sub_id,
        channel=call.request.channel,
        count_id=count.id,
        tally_seq=last.seq,
        action=DeliveryAction.EDIT_LIVE,
        significant=False,
        payload=fmt.for_status(count, last).to_json(),
        created_at=call.services.clock.now(),
    )


def mention_audit(
    call: Call, count_id: str, wants: Wants, before: Subscription | None
) -> AuditEntry:
    """Setting who gets pinged is written to the audit log, like an admin action."""
    return AuditEntry(
        at=call.services.clock.now(),
        actor=call.request.actor,
        action="subscribe",
        count_id=count_id,
        old=None if before is None else before.wants.grammar(),
        new=wants.grammar(),
        allowed=True,
        detail=f"pings @{wants.mention} on calls and the final in {call.request.channel}",
    )
