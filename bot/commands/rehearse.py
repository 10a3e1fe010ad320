"""``rehearse <count> [delete|keep]``: a test message in every channel subscribed to the count,
and which failed and why (:mod:`bot.delivery.rehearsal`).

Admins of the count only. Authority stops at the edge of a place: the operator's admins rehearse
every subscription of the operator's counts; anyone else who may administer a count (its
place's admins, its grantees) rehearses only the subscriptions in the place they ask from.
Audited like every admin verb (``bot.commands.chain.audit``).
"""

from __future__ import annotations

from bot.commands.args import Choice, ChoiceArg, CountArg
from bot.commands.authority import find_count
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain.model import OPERATOR
from bot.errors import CommandError
from bot.store import subscriptions as sub_rows

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""

AFTER = ChoiceArg(
    "after",
    (
        Choice("delete", "delete the test messages after a minute", "deleted after a minute"),
        Choice("keep", "keep the test messages", "kept"),
    ),
    default="delete",
    description="What becomes of the test messages (default: deleted after a minute)",
)


@VERBS.verb(
    VerbSpec(
        Verb.REHEARSE,
        "Admins: post a test message to every channel subscribed to a count",
        (CountArg(), AFTER),
        admin="rehearse a count",
    )
)
async def rehearse(call: Call) -> Reply:
    s, request = call.services, call.request
    if s.rehearsals is None:
        raise CommandError("rehearse needs the running bot (its platforms are not open)")
    assert call.command.count is not None  # a required CountArg took it
    count = await find_count(s.db, call.command.count, request)
    async with s.db.connect() as conn:
        subs = await sub_rows.for_count(conn, count.id)
    everywhere = count.owner == OPERATOR and request.admin
    here = request.channel
    channels = [
        sub.channel
        for sub in subs
        if sub.wants.via is None  # a follower gets what its announcement channel publishes
        and (
            everywhere
            or (sub.channel.platform == here.platform and sub.channel.workspace == here.workspace)
        )
    ]
    outcome = await s.rehearsals.rehearse(
        count.id, count.title, channels, keep=call.command.choice == "keep"
    )
    summary = outcome.summary(count.id)
    if not everywhere:
        summary += (
            f"\n(Only this {request.place}'s channels: the others are their admins' to rehearse.)"
        )
    return Reply(summary, ok=not outcome.failed)
