"""``/count webhook``: targets a place's admins register in chat, where the operator allows it
(``[webhook] allow_chat_targets``; off by default, and then the verb does not exist).

    /count webhook <count> https://hooks.example.org/abc [json|slack|teams]
    /count webhook <count> list
    /count webhook <count> remove <N>

Only those who administer the count may (``on_count``: the count must be theirs to administer,
so authority stops at the place's edge); each target is the place's own
(``webhook:<platform>.<place>/t<N>``), subscribed to the count for its significant events, and
its alerts go where the count's do. The URL goes through the egress guard as it is typed (the
operator's ``[chat_sources]`` policy: never the operator's own network) and again at every
connect (the adapter's guarded session for chat targets allows no private address). A ``json``
target's signing secret is shown once, where the reply reaches the asker alone. The URL is
never shown back (it is the receiver's secret): ``list`` names its host.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable

from sqlalchemy import delete, func, insert, select
from yarl import URL

from bot.platform import (
    Call,
    ChannelRef,
    CommandError,
    CountArg,
    EgressRefused,
    Mode,
    Platform,
    Reply,
    TextArg,
    VerbSpec,
    subscribe,
    unsubscribe,
)

from .settings import FORMATS, WebhookSettings
from .tables import webhook_targets as t

SPEC = VerbSpec(
    "webhook",
    "Admins: post a count's updates to a webhook URL (add, list, remove)",
    (CountArg(), TextArg("what", "URL [json|slack|teams], list, or remove N", required=False)),
    admin="manage webhooks",
)
WEBHOOK = Platform("webhook")


def place_of(call: Call) -> str:
    channel = call.request.channel
    return f"{channel.platform}.{channel.workspace}"


def channel_of(place: str, target_id: int) -> ChannelRef:
    return ChannelRef(WEBHOOK, place, f"t{target_id}")


def handler(settings: WebhookSettings) -> Callable[[Call], Awaitable[Reply]]:
    """The verb's handler, with the plug-in's settings."""

    async def webhook(call: Call) -> Reply:
        count = call.command.count or ""
        words = (call.command.text or "list").split()
        if words[0] == "list":
            return await _list(call, count)
        if words[0] == "remove":
            if len(words) != 2 or not words[1].lstrip("#").isdigit():
                raise CommandError(f"which target? {SPEC.usage_line()} (list shows them)")
            return await _remove(call, count, int(words[1].lstrip("#")))
        return await _add(call, count, words, settings)

    return webhook


async def _list(call: Call, count: str) -> Reply:
    s, place = call.services, place_of(call)
    async with s.db.connect() as conn:
        rows = (
            await conn.execute(select(t).where(t.c.place == place, t.c.count_id == count))
        ).all()
    if not rows:
        return Reply(f"No webhook gets {count} from this {call.request.place}.")
    shown = [f"#{r.id} {r.format} to {URL(r.url).host}, by {r.created_by}" for r in rows]
    return Reply(f"Webhooks of {count} here:\n" + "\n".join(shown))


async def _remove(call: Call, count: str, target_id: int) -> Reply:
    s, place = call.services, place_of(call)
    async with s.db.begin() as conn:
        gone = await conn.scalar(
            delete(t)
            .where(t.c.id == target_id, t.c.place == place, t.c.count_id == count)
            .returning(t.c.id)
        )
        if gone is None:
            raise CommandError(f"{count} has no webhook #{target_id} here")
        await unsubscribe(conn, channel_of(place, target_id), count)
    return Reply(f"Webhook #{target_id} no longer gets {count}.")


async def _add(call: Call, count: str, words: list[str], settings: WebhookSettings) -> Reply:
    s, request, place = call.services, call.request, place_of(call)
    if len(words) > 2 or (len(words) == 2 and words[1] not in FORMATS):
        raise CommandError(f"{SPEC.usage_line()}: a URL, then json, slack or teams")
    fmt = words[1] if len(words) == 2 else "json"
    try:
        url = s.egress.check(words[0])
    except EgressRefused as exc:
        raise CommandError(f"that webhook address is refused: {exc}") from None
    if fmt == "json" and not request.private_replies:
        raise CommandError(
            f"its signing secret would show to everyone in this {request.place}: add a json "
            "webhook where tallybot can answer you alone"
        )
    secret = secrets.token_urlsafe(24) if fmt == "json" else None
    now = s.clock.now()
    async with s.db.begin() as conn:
        held = await conn.scalar(select(func.count()).where(t.c.place == place))
        if (held or 0) >= settings.max_chat_targets:
            raise CommandError(
                f"this {request.place} has {held} webhooks, the most allowed "
                f"([webhook] max_chat_targets): remove one first"
            )
        values = {"place": place, "count_id": count, "url": str(url), "format": fmt}
        target_id = await conn.scalar(
            insert(t)
            .values(**values, secret=secret, created_by=request.actor, created_at=now)
            .returning(t.c.id)
        )
        assert target_id is not None
        await subscribe(
            conn, channel_of(place, target_id), count, Mode.EVENTS, by=request.actor, at=now
        )
    said = f"Webhook #{target_id} gets {count}'s significant updates ({fmt}, to {url.host})."
    if secret is not None:
        said += f"\nIts signing secret, shown only now (copy it): {secret}"
    return Reply(said)
