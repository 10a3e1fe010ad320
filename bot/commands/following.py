"""A person's own follows: ``follow <count> [final|calls|leads|events|remind|close=N|N%]``,
``unfollow <count>`` and ``following`` (``bot.domain.follow``).

Anyone who may see a count may follow it (``bot.commands.authority.can_see``): what it hears is
written and shown in ``subscribe``'s grammar (``bot.commands.hearing``, ``describe``), and its
messages go to the person's direct messages with the bot (``Request.inbox``, opened as the
follow is made: on Telegram the person must have started the bot). Every answer is shown only
to the person; ``following`` is refused where a reply cannot be private (a Telegram group).
Following is nobody else's business: no audit entry, no word in any channel.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.commands.args import Arg, Command, CountArg, Option, Value
from bot.commands.authority import find_count
from bot.commands.hearing import parse_wants
from bot.commands.request import Reply
from bot.commands.subscribing import describe
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.domain.follow import DEFAULT, refused
from bot.domain.limits import MAX_FOLLOWERS, MAX_FOLLOWS
from bot.errors import CommandError
from bot.store import follows as follow_rows

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""

HEARS_HELP = "final, calls (the default), leads, events, remind, close=50 or close=2%"


@dataclass(frozen=True, slots=True)
class FollowWantsArg(Arg):
    """What a follow hears, in ``subscribe``'s grammar (``calls`` when nothing is given)."""

    name: str = "hears"

    @property
    def usage(self) -> str:
        return "[final|calls|leads|events|remind|close=N|N%]"

    def take(self, command: Command, words: list[str], usage: str) -> tuple[Command, list[str]]:
        wants = parse_wants(words) if words else DEFAULT
        why = refused(wants)
        if why is not None:
            raise CommandError(
                f"a follow hears final, calls, leads, events, remind or close=: {why}"
            )
        return replace(command, wants=wants), []

    def options(self) -> tuple[Option, ...]:
        return (Option(self.name, f"What to send you: {HEARS_HELP}"),)

    def words(self, values: Mapping[str, Value]) -> list[str]:
        given = values.get(self.name)
        return [] if given is None else str(given).split()


@VERBS.verb(
    VerbSpec(
        Verb.FOLLOW,
        "Get a count's calls (or what you choose) by direct message",
        (CountArg("The count (start typing to search)"), FollowWantsArg()),
    )
)
async def follow(call: Call) -> Reply:
    s, r = call.services, call.request
    assert call.command.count is not None
    count = await find_count(s.db, call.command.count, r)
    if count.archived:
        raise CommandError(f"{count.id} is archived: it sends nothing more")
    wants = call.command.wants or DEFAULT
    if r.inbox is None:
        where = str(r.channel.platform).capitalize()
        raise CommandError(f"{where} has no direct messages: subscribe a channel instead")
    async with s.db.connect() as conn:
        before = await follow_rows.find(conn, r.channel.platform, r.user_id, count.id)
        mine = await follow_rows.how_many(conn, platform=str(r.channel.platform), user_id=r.user_id)
        followers = await follow_rows.how_many(conn, count_id=count.id)
    if before is None and mine >= MAX_FOLLOWS:
        raise CommandError(
            f"you follow {MAX_FOLLOWS} counts, the most there may be: unfollow one first"
        )
    if before is None and followers >= MAX_FOLLOWERS:
        raise CommandError(f"{count.id} has {MAX_FOLLOWERS:,} followers, the most there may be")
    inbox = await r.inbox.open()
    async with s.db.begin() as conn:
        made, before = await follow_rows.follow(
            conn, r.channel, r.user_id, count.id, wants, inbox=inbox, at=s.clock.now()
        )
    said = f"{count.id}: {describe(made.wants)}, by direct message"
    if before is None:
        return Reply(f"You follow {said}. (unfollow {count.id} stops it.)")
    if before.wants == made.wants:
        return Reply(f"You already follow {said}.")
    return Reply(f"You now follow {said} (was: {describe(before.wants)}).")


@VERBS.verb(VerbSpec(Verb.UNFOLLOW, "Stop getting a count by direct message", (CountArg(),)))
async def unfollow(call: Call) -> Reply:
    s, r = call.services, call.request
    name = call.command.count
    assert name is not None
    async with s.db.begin() as conn:  # whatever became of the count since
        made = await follow_rows.find(conn, r.channel.platform, r.user_id, name)
        gone = made is not None and await follow_rows.unfollow(conn, made.id)
    if not gone:
        raise CommandError(f"you do not follow {name} (following lists what you follow)")
    return Reply(f"You no longer follow {name}.")


@VERBS.verb(VerbSpec(Verb.FOLLOWING, "The counts you follow by direct message (only you see it)"))
async def following(call: Call) -> Reply:
    s, r = call.services, call.request
    if not r.private_replies:
        raise CommandError("your follows are shown only to you: ask in your chat with the bot")
    async with s.db.connect() as conn:
        mine = await follow_rows.of_person(conn, r.channel.platform, r.user_id)
    if not mine:
        return Reply("You follow no count. follow <count> sends you its calls by direct message.")
    lines = [f"  {f.count_id}: {describe(f.wants)} ({f.wants.grammar()})" for f in mine]
    return Reply("You follow, by direct message:\n" + "\n".join(lines))
