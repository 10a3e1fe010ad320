"""``alerts [here|off]``: where this place's alerts go (``bot.store.place_alerts``).

A place's admins choose the channel its alerts come to: those about its own counts (a source
gone stale, a tally rejected, a channel that stopped getting a count). Until they do, the
channel its first count was made in gets them. The operator's alerts stay in ``[admins]
alerts``, set in the configuration.
"""

from __future__ import annotations

from bot.commands.args import Choice, ChoiceArg
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.errors import NotAuthorized
from bot.store import audit as audit_rows
from bot.store import place_alerts
from bot.store.audit import AuditEntry

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""

ACTION = ChoiceArg(
    "action",
    (
        Choice("show", "where they go now", "where this place's alerts go"),
        Choice("here", "send them to this channel", "send this place's alerts here"),
        Choice("off", "send them nowhere", "stop this place's alerts"),
    ),
    default="show",
    description="What to do (default: show)",
)


@VERBS.verb(
    VerbSpec(
        Verb.ALERTS,
        "Admins: where this place's alerts about its counts go (here, off)",
        (ACTION,),
        admin="choose where alerts go",
        on_count=False,
        audits_itself=True,
    )
)
async def alerts(call: Call) -> Reply:
    s, request, command = call.services, call.request, call.command
    if not request.tenant_admin:
        raise NotAuthorized(
            f"only admins of this {request.place} can choose where its alerts go; ask one of them"
        )
    owner, action, now = request.tenant, command.choice or "show", s.clock.now()
    here = request.channel
    async with s.db.begin() as conn:
        before = await place_alerts.get(conn, owner)
        if action == "show":
            if before is None:
                return Reply(
                    f"This {request.place}'s alerts go nowhere: alerts here sends them to "
                    "this channel."
                )
            return Reply(f"This {request.place}'s alerts go to {before}.")
        if action == "here":
            await place_alerts.choose(conn, owner, here, by=request.actor, at=now)
        else:
            await place_alerts.clear(conn, owner)
        old, new = str(before) if before else "", str(here) if action == "here" else ""
        await audit_rows.record(
            conn, AuditEntry(now, request.actor, call.spec.name, None, old, new, True, action)
        )
    if action == "here":
        return Reply(
            f"Alerts about the counts of this {request.place} come to this channel now ({here})."
        )
    return Reply(f"This {request.place}'s alerts go nowhere now: alerts here brings them back.")
