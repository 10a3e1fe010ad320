"""The built-in verbs: their specs and handlers, registered in :data:`VERBS`.

    subscribe <count> [events|all|live] [final|calls|leads|remind] [close=N|N%] [mention=@role]
              [thread] [pin] [publish] | via=#channel    unsubscribe <count>      list
    status [count]                          history <count>          chart <count>       help
    update <count> yes=463 no=1100 challenged=505 void=76 received=3215    (admins)
    correct <count> ...                     (admins: figures that go down, or change a final)
    pause <count>   resume <count>   final <count>                          (admins)
    deliveries                              (admins: messages that could not be delivered)
    create <count> <title> choices=... | edit | archive | delete        (:mod:`count_verbs`)
    admins add|remove|list <count> [@who] | apikey create|revoke|list   (:mod:`grants`)
    alerts [here|off]                       (admins: where this place's alerts go; :mod:`alerts`)
    rehearse <count> [delete|keep]          (admins: a test message everywhere; :mod:`rehearse`)
    schedule <count> starts=|resumes=TIME [remind=15m] | clear    (admins; :mod:`schedules`)
    follow <count> [final|calls|...] | unfollow <count> | following   (by DM; :mod:`following`)

"Admins" are the count's (:mod:`bot.commands.authority`): authority stops at its owner's edge.
Every error is one line that says what to type instead.
"""

from __future__ import annotations

from bot.commands import alerts, count_verbs, following, grants, rehearse, reports, schedules
from bot.commands.args import Choice, ChoiceArg, CountArg, FiguresArg
from bot.commands.authority import find_count
from bot.commands.hearing import WantsArg
from bot.commands.manual import manual
from bot.commands.request import Reply, group_called
from bot.commands.subscribing import (
    checked_wants,
    describe,
    follow_audit,
    follow_for,
    mention_audit,
    scoreboard,
    unfollow_note,
)
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain.model import Count
from bot.domain.subscription import Mode, Wants
from bot.errors import CommandError
from bot.store import audit as audit_rows
from bot.store import outbox
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows

MODE = ChoiceArg(
    "mode",
    (
        Choice(Mode.EVENTS, "significant events only (default)", "significant news only"),
        Choice(Mode.ALL, "every change", "every change"),
        Choice(
            Mode.LIVE, "a live scoreboard, plus significant events", "a scoreboard kept up to date"
        ),
    ),
    default=Mode.EVENTS,
    description="What to post (default: events)",
)
WANTS = WantsArg(MODE)
SEARCH = CountArg("The count (start typing to search)")
COUNT = CountArg()

VERBS = Verbs()
"""The built-in verbs, in the order ``help`` lists them."""


async def the_count(call: Call) -> Count:
    """The count the command names (a CommandError naming the close ones if there is none)."""
    assert call.command.count is not None  # a required CountArg took it
    return await find_count(call.services.db, call.command.count, call.request)


@VERBS.verb(
    VerbSpec(
        Verb.SUBSCRIBE,
        "Post a count's updates in this channel",
        (SEARCH, WANTS),
        public=True,
        changes_channel=True,
    )
)
async def subscribe(call: Call) -> Reply:
    count, request, s = await the_count(call), call.request, call.services
    if count.archived:
        raise CommandError(f"{count.id} is archived: it posts nothing more")
    wants = await checked_wants(call.command.wants or Wants(), request)
    async with s.db.connect() as conn:
        followed = await sub_rows.find(conn, request.channel, count.id)
    made = await follow_for(request, count.id, wants, followed)  # Discord's via=
    async with s.db.begin() as conn:
        sub, before = await sub_rows.put(
            conn,
            request.channel,
            count.id,
            wants,
            by=request.actor,
            at=s.clock.now(),
            follow_webhook=made,
        )
        if made is not None and (followed is None or followed.follow_webhook != made):
            await audit_rows.record(conn, follow_audit(call, count.id, wants, made))
        # a scoreboard at once for a new live subscription (or one enabled again)
        fresh = before is None or not before.enabled or not before.wants.live
        last = await tally_rows.last(conn, count.id) if wants.live and fresh else None
        board = last is not None
        if last is not None:
            await outbox.enqueue(conn, [scoreboard(call, sub.id, count, last)])
        if wants.mention is not None and (before is None or before.wants.mention != wants.mention):
            await audit_rows.record(conn, mention_audit(call, count.id, wants, before))
    if board:
        s.on_queued({request.channel.platform})
    pinged = await group_called(request, wants.mention) if wants.mention else None
    said = f"{count.id}: {describe(wants, pinged)}."
    if before is None:
        return Reply(f"Subscribed this channel to {said}", ephemeral=False)
    if not before.enabled:
        return Reply(f"Subscribed this channel again to {said}", ephemeral=False)
    changed = wants.changes(before.wants, pinged)
    if not changed:
        return Reply(f"This channel is already subscribed to {said}", ephemeral=False)
    return Reply(
        f"Updated the subscription of this channel to {count.id}: {'; '.join(changed)}.",
        ephemeral=False,
    )


@VERBS.verb(
    VerbSpec(
        Verb.UNSUBSCRIBE,
        "Stop posting a count's updates in this channel",
        (COUNT,),
        changes_channel=True,
    )
)
async def unsubscribe(call: Call) -> Reply:
    name = call.command.count
    assert name is not None  # a required CountArg took it
    async with call.services.db.connect() as conn:
        sub = await sub_rows.find(conn, call.request.channel, name)
    note = await unfollow_note(call.request, sub)  # a via= subscription's follow
    async with call.services.db.begin() as conn:  # whatever became of the count since
        gone = await sub_rows.unsubscribe(conn, call.request.channel, name)
    if not gone:
        count = await the_count(call)
        raise CommandError(f"this channel is not subscribed to {count.id}")
    return Reply(f"Unsubscribed this channel from {name}.{note}")


@VERBS.verb(VerbSpec(Verb.LIST, "Every count, and what this channel follows"))
async def list_counts(call: Call) -> Reply:
    return await reports.list_counts(call.services.db, call.request)


@VERBS.verb(
    VerbSpec(
        Verb.STATUS,
        "Where a count stands now",
        (CountArg("The count (optional when this channel follows just one)", required=False),),
        public=True,
    )
)
async def status(call: Call) -> Reply:
    s = call.services
    usage = call.spec.usage_line()
    reply = await reports.status(
        s.db, s.health, call.request, call.command.count, usage, now=s.clock.now()
    )
    return await reports.with_link(reply, s.page_link)


@VERBS.verb(VerbSpec(Verb.HISTORY, "A count's last updates", (COUNT,)))
async def history(call: Call) -> Reply:
    return await reports.history(call.services.db, await the_count(call))


@VERBS.verb(VerbSpec(Verb.CHART, "A count so far, as a picture", (COUNT,), public=True))
async def chart(call: Call) -> Reply:
    s = call.services
    return await reports.chart(s.db, s.charts, await the_count(call))


@VERBS.verb(VerbSpec(Verb.HELP, "What tallybot can do", instant=True))
async def help_(call: Call) -> Reply:
    return Reply(call.services.verbs.help())


def _figures(example: str, *, required: bool = True) -> FiguresArg:
    return FiguresArg(example, required=required)


@VERBS.verb(
    VerbSpec(
        Verb.UPDATE,
        "Admins: enter new figures for a count",
        (COUNT, _figures("yes=463 no=1100 [void=N] [challenged=N] [sustained=N] [received=N]")),
        admin="update figures",
        audits_itself=True,
    ),
    VerbSpec(
        Verb.CORRECT,
        "Admins: correct figures (that go down, or of a final)",
        (COUNT, _figures("yes=463 no=1090 [void=N] [challenged=N] [sustained=N] [received=N]")),
        admin="correct figures",
        audits_itself=True,
    ),
    VerbSpec(
        Verb.PAUSE,
        "Admins: the count is paused",
        (COUNT,),
        admin="pause a count",
        audits_itself=True,
    ),
    VerbSpec(
        Verb.RESUME,
        "Admins: the count goes on",
        (COUNT,),
        admin="resume a count",
        audits_itself=True,
    ),
    VerbSpec(
        Verb.FINAL,
        "Admins: the count is final (optionally with figures)",
        (COUNT, _figures("[yes=N no=N ...]", required=False)),
        admin="declare a count final",
        audits_itself=True,
    ),
)
async def manual_figures(call: Call) -> Reply:
    s = call.services
    count = await the_count(call)
    return await manual(s.db, s.pipeline, s.clock, call.request, call.command, count)


@VERBS.verb(
    VerbSpec(
        Verb.DELIVERIES,
        "Admins: messages that could not be delivered",
        admin="list failed deliveries",
    )
)
async def deliveries(call: Call) -> Reply:
    return await reports.deliveries(call.services.db, call.request)


for _more in (
    count_verbs.VERBS,
    grants.VERBS,
    alerts.VERBS,
    rehearse.VERBS,
    following.VERBS,
    schedules.VERBS,
):
    for _spec in _more:
        VERBS.register(_spec, _more.handler(_spec.name))
