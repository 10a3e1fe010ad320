"""The built-in verbs: their specs and handlers, registered in :data:`VERBS`.

    subscribe <count> [events|all|live]     unsubscribe <count>      list
    status [count]                          history <count>          chart <count>       help
    update <count> yes=463 no=1100 challenged=505 void=76 received=3215    (admins)
    correct <count> ...                     (admins: figures that go down, or change a final)
    pause <count>   resume <count>   final <count>                          (admins)
    deliveries                              (admins: messages that could not be delivered)

Every error is one line that says what to type instead.
"""

from __future__ import annotations

from bot.commands import reports
from bot.commands.args import Choice, ChoiceArg, CountArg, FiguresArg
from bot.commands.manual import manual
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain import format as fmt
from bot.domain.model import Count
from bot.errors import CommandError
from bot.store import outbox
from bot.store import subscriptions as sub_rows
from bot.store import tallies as tally_rows
from bot.store.outbox import DeliveryAction, NewDelivery
from bot.subscription import Mode

MODE_WORDS = {
    Mode.EVENTS: "significant events only",
    Mode.ALL: "every change",
    Mode.LIVE: "a live scoreboard plus significant events",
}
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
SEARCH = CountArg("The count (start typing to search)")
COUNT = CountArg()

VERBS = Verbs()
"""The built-in verbs, in the order ``help`` lists them."""


async def the_count(call: Call) -> Count:
    """The count the command names (a CommandError naming the close ones if there is none)."""
    assert call.command.count is not None  # a required CountArg took it
    return await reports.find_count(call.services.db, call.command.count)


@VERBS.verb(
    VerbSpec(Verb.SUBSCRIBE, "Post a count's updates in this channel", (SEARCH, MODE), public=True)
)
async def subscribe(call: Call) -> Reply:
    count, request, s = await the_count(call), call.request, call.services
    mode = Mode(call.command.choice or Mode.EVENTS)
    async with s.db.begin() as conn:
        sub, created = await sub_rows.subscribe(
            conn, request.channel, count.id, mode, by=request.actor, at=s.clock.now()
        )
        last = await tally_rows.last(conn, count.id)
        if mode is Mode.LIVE and last is not None:
            board = fmt.for_status(count, last)
            delivery = NewDelivery(
                subscription_id=sub.id,
                channel=sub.channel,
                count_id=count.id,
                tally_seq=last.seq,
                action=DeliveryAction.EDIT_LIVE,
                significant=False,
                payload=board.to_json(),
                created_at=s.clock.now(),
            )
            await outbox.enqueue(conn, [delivery])
    if mode is Mode.LIVE and last is not None:
        s.on_queued({request.channel.platform})
    verb = "Subscribed" if created else "Updated the subscription of"
    return Reply(f"{verb} this channel to {count.id}: {MODE_WORDS[mode]}.", ephemeral=False)


@VERBS.verb(VerbSpec(Verb.UNSUBSCRIBE, "Stop posting a count's updates in this channel", (COUNT,)))
async def unsubscribe(call: Call) -> Reply:
    count = await the_count(call)
    async with call.services.db.begin() as conn:
        gone = await sub_rows.unsubscribe(conn, call.request.channel, count.id)
    if not gone:
        raise CommandError(f"this channel is not subscribed to {count.id}")
    return Reply(f"Unsubscribed this channel from {count.id}.")


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
    reply = await reports.status(s.db, s.health, call.request, call.command.count, usage)
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
        (COUNT, _figures("yes=463 no=1100 [void=N] [challenged=N] [received=N]")),
        admin="update figures",
        audits_itself=True,
    ),
    VerbSpec(
        Verb.CORRECT,
        "Admins: correct figures (that go down, or of a final)",
        (COUNT, _figures("yes=463 no=1090 [void=N] [challenged=N] [received=N]")),
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
    return await reports.deliveries(call.services.db)
