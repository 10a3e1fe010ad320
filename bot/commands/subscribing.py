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
    if wants.via is not None:
        if wants != Wants(via=wants.via):
            raise CommandError("via= takes what that channel publishes: leave out the rest")
        if request.follows is None:
            raise CommandError(f"via= is not supported on {platform}; leave it out")
        return wants
    for on, extra in ((wants.thread, Extra.THREAD), (wants.pin, Extra.PIN)):
        if on and extra not in request.supports:
            raise CommandError(f"{extra} is not supported on {platform}; leave it out")
    if wants.pin and not wants.live:
        raise CommandError("pin pins the live scoreboard: add live (subscribe <count> live pin)")
    if wants.publish and Extra.PUBLISH not in request.supports:
        raise CommandError("publish works in a Discord announcement channel only; leave it out")
    if wants.publish and wants.thread:
        raise CommandError("publish crossposts posts in the channel, not a thread: leave out one")
    if wants.mention is None:
        return wants
    if request.mentions is None or Extra.MENTION not in request.supports:
        raise CommandError(f"mention is not supported on {platform}; leave it out")
    return replace(wants, mention=await request.mentions.resolve(wants.mention))


def describe(wants: Wants, pinged: str | None = None) -> str:
    """What a subscription hears, in words: ``a live scoreboard plus significant events``;
    ``pinged``: who its ``mention`` is, by name (:func:`bot.commands.request.group_called`)."""
    if wants.via is not None:
        return (
            f"what the announcement channel #{wants.via} publishes (its calls and the final), "
            "through Discord's channel following"
        )
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
    if wants.publish:
        extras.append("calls and the final published to every following channel")
    return "; ".join([text, *extras])


async def follow_for(
    request: Request, count_id: str, wants: Wants, before: Subscription | None
) -> str | None:
    """The follow ``wants`` keeps in this channel: what the platform made for it (a webhook),
    made now when ``wants.via`` is new here, kept when it is the one the channel follows
    already; None without ``via=``. The follow it replaces is ended first (a CommandError when
    it cannot be: the person removes it by hand, then subscribes again)."""
    made = before.follow_webhook if before is not None else None
    if before is not None and before.wants.via == wants.via and made is not None:
        return made
    if made is not None:
        todo = None if request.follows is None else await request.follows.unfollow(made)
        if request.follows is None or todo is not None:
            raise CommandError(todo or "remove this channel's follow in its settings first")
    if wants.via is None:
        return None
    assert request.follows is not None  # checked_wants
    return await request.follows.follow(count_id, wants.via)


async def unfollow_note(request: Request, sub: Subscription | None) -> str:
    """What ``unsubscribe`` says of a ``via=`` subscription's follow, once it tried to end it."""
    if sub is None or sub.follow_webhook is None:
        return ""
    todo = "remove the follow in this channel's settings (Integrations, Channels Followed)."
    if request.follows is not None:
        todo = await request.follows.unfollow(sub.follow_webhook) or ""
    if not todo:
        return f" It no longer follows #{sub.wants.via}."
    return f" It still follows #{sub.wants.via}: {todo}"


def follow_audit(call: Call, count_id: str, wants: Wants, made: str) -> AuditEntry:
    """A channel made to follow an announcement channel is written to the audit log."""
    return AuditEntry(
        at=call.services.clock.now(),
        actor=call.request.actor,
        action="subscribe",
        count_id=count_id,
        old=None,
        new=wants.grammar(),
        allowed=True,
        detail=f"{call.request.channel} follows #{wants.via} (webhook {made})",
    )


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
