"""The table of verbs and the chain: the grammar, usage and help come from the specs; a verb's
typed options write the same line a person would type; every admin action is audited once."""

from __future__ import annotations

import pytest

from bot.commands.args import ChoiceArg, CountArg, SettingsArg, TextArg, Value
from bot.commands.builtin import MODE, VERBS
from bot.commands.handler import Commands
from bot.commands.request import Reply, Request
from bot.commands.throttle import Throttle
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.delivery.pacing import Window
from bot.domain.subscription import ChannelRef, Mode, Platform, Wants
from bot.errors import CommandError
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import audit as audit_rows
from bot.testing.clock import FakeClock

CHAN = ChannelRef(Platform("discord"), "g1", "c1")

USAGE = {  # as they read before the table existed: they must not change
    "subscribe": (
        "subscribe <count> [events|all|live] [final|calls|leads|remind] [close=N|N%] "
        "[mention=@role] [thread] [pin] [publish] | via=#channel"  # publish, via= (issue 31)
    ),
    "unsubscribe": "unsubscribe <count>",
    "list": "list",
    "status": "status [count]",
    "history": "history <count>",
    "chart": "chart <count>",
    "help": "help",
    "update": "update <count> yes=463 no=1100 [void=N] [challenged=N] [sustained=N] [received=N]",
    "correct": "correct <count> yes=463 no=1090 [void=N] [challenged=N] [sustained=N] [received=N]",
    "pause": "pause <count>",
    "resume": "resume <count>",
    "final": "final <count> [yes=N no=N ...]",
    "deliveries": "deliveries",
}
SETTINGS = (
    "[choices=yes:Yes,no:No] [rule=majority|plurality|threshold] [tie=ID] [threshold=2/3] "
    "[received=N] [eligible=N] [public=yes|no] [pace=yes|no] [source=URL] "
    "[fields=yes:path,...] [title]"
)
TENANCY = {  # issue 15: counts run from chat, by their owners
    # a new count needs its choices: not marked optional (issue 28 part 5)
    "create": "create <count> "
    + SETTINGS.replace("[choices=yes:Yes,no:No]", "choices=yes:Yes,no:No"),
    "edit": "edit <count> " + SETTINGS.replace(" [title]", " [correction=yes] [title]"),
    "archive": "archive <count> [undo]",
    "delete": "delete <count> [confirm]",
    "admins": "admins [list|add|remove] <count> [who]",
    "apikey": "apikey [list|create|revoke] [key]",
    "alerts": "alerts [show|here|off]",
}
REHEARSAL = {"rehearse": "rehearse <count> [delete|keep]"}  # issue 28: the day before a count
FOLLOWING = {  # issue 30: personal alerts by direct message
    "follow": "follow <count> [final|calls|leads|events|remind|close=N|N%]",
    "unfollow": "unfollow <count>",
    "following": "following",
}
SCHEDULING = {  # issue 30: when a count starts or resumes
    "schedule": "schedule <count> [starts=...] [resumes=...] [remind=...] [clear]",
}
EVERY = {**USAGE, **TENANCY, **REHEARSAL, **FOLLOWING, **SCHEDULING}


def test_usage_help_and_admin_words_come_from_the_specs() -> None:
    assert {s.name: s.usage for s in VERBS} == EVERY
    assert [s.name for s in VERBS] == [v.value for v in Verb if v in EVERY]
    help_reply = VERBS.help()
    assert help_reply == "Commands:\n" + "\n".join(f"  {u}" for u in EVERY.values())
    admins = {s.name: s.admin for s in VERBS if s.admin is not None}
    assert admins == {
        "update": "update figures",
        "correct": "correct figures",
        "pause": "pause a count",
        "resume": "resume a count",
        "final": "declare a count final",
        "deliveries": "list failed deliveries",
        "create": "create a count",
        "edit": "edit a count",
        "archive": "archive a count",
        "delete": "delete a count",
        "admins": "manage a count's admins",
        "apikey": "manage API keys",
        "alerts": "choose where alerts go",
        "rehearse": "rehearse a count",
        "schedule": "schedule a count",
    }
    assert {s.name for s in VERBS if s.public} == {"subscribe", "status", "chart"}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("list now", "list takes nothing after it; usage: list"),
        ("status a b", "usage: status [count]"),
        (
            "subscribe a live now",
            "unknown option 'now': use events, all, live, final, calls, leads, remind, close=50 "
            "or close=2%, mention=@role, thread, pin, publish or via=#channel",
        ),
        ("pause a b", "pause takes only the count; usage: pause <count>"),
        (
            "subscribe a LOUD",
            "unknown option 'LOUD': use events, all, live, final, calls, leads, remind, close=50 "
            "or close=2%, mention=@role, thread, pin, publish or via=#channel",
        ),
        ("wat", f"unknown command 'wat'; try one of: {', '.join(EVERY)}"),
    ],
)
def test_the_grammar_words_errors_as_before(text: str, error: str) -> None:
    with pytest.raises(CommandError) as caught:
        VERBS.parse(text)
    assert str(caught.value) == error


def test_parsed_commands() -> None:
    assert VERBS.parse("") == VERBS.parse("help")
    sub = VERBS.parse("Subscribe Bessemer-2021 LIVE")
    assert (sub.verb, sub.count, sub.wants) == ("subscribe", "bessemer-2021", Wants.of(Mode.LIVE))
    assert VERBS.parse("subscribe b").wants == Wants()
    assert VERBS.parse("status").count is None
    assert VERBS.parse("final b").figures == ()


def test_slash_options_become_the_text_grammar() -> None:
    update = VERBS[Verb.UPDATE]
    values: dict[str, Value] = {"count": "bessemer-2021", "figures": "yes = 463, no=1,100; "}
    line = update.line({**values, "void": 76, "challenged": 505, "received": 3215})
    assert line == "update bessemer-2021 yes=463 no=1,100 void=76 challenged=505 received=3215"
    assert VERBS.parse(line).figures == (
        ("yes", 463),
        ("no", 1100),
        ("void", 76),
        ("challenged", 505),
        ("received", 3215),
    )
    assert VERBS[Verb.SUBSCRIBE].line({"count": "bessemer-2021", "mode": "live"}) == (
        "subscribe bessemer-2021 live"
    )
    assert VERBS[Verb.STATUS].line({}) == "status"
    with pytest.raises(CommandError, match="no spaces"):
        VERBS[Verb.STATUS].line({"count": "bessemer 2021"})


def test_options_of_a_spec() -> None:
    options = VERBS[Verb.UPDATE].options()
    assert [(o.name, o.kind.value, o.required) for o in options] == [
        ("count", "count", True),
        ("figures", "text", False),
        ("void", "number", False),
        ("challenged", "number", False),
        ("received", "number", False),
    ]
    (mode,) = MODE.options()
    assert [value for _, value in mode.choices] == ["events", "all", "live"]


def test_text_and_settings_arguments_for_verbs_to_come() -> None:
    """Issue 15's verbs take a title and key=value settings: the kinds exist and parse."""
    create = VerbSpec(
        "create",
        "Admins: a new count",
        (
            SettingsArg(("rule", "threshold", "eligible"), "Settings as key=value"),
            TextArg("title", "The count's title"),
        ),
        admin="create a count",
    )
    with pytest.raises(ValueError, match="one argument of each kind"):
        VerbSpec("x", "x", (CountArg(), CountArg("Another")))
    table = Verbs()
    table.register(create, _echo)
    with pytest.raises(CommandError, match="no title given; usage: create"):
        table.parse("create")
    parsed = table.parse("create rule=majority Amazon BHM1 eligible=5876")
    assert parsed.settings == (("rule", "majority"), ("eligible", "5876"))
    assert parsed.text == "Amazon BHM1"
    with pytest.raises(CommandError, match="rule is given twice"):
        table.parse("create rule=a rule=b T")
    titled = Verbs()
    titled.register(VerbSpec("name", "Name it", (CountArg(), TextArg("title", "Title"))), _echo)
    assert titled.parse("name b  Amazon  BHM1").text == "Amazon BHM1"
    with pytest.raises(ValueError, match="registered twice"):
        titled.register(VerbSpec("name", "Again"), _echo)
    with pytest.raises(ValueError, match="verb name 'Bad-Name'"):
        VerbSpec("Bad-Name", "x")
    choice = ChoiceArg("mode", MODE.choices, "events", "What")
    assert choice.usage == "[events|all|live]"


async def _echo(call: Call) -> Reply:
    return Reply(f"{call.spec.name}: {call.command.text}", ephemeral=False)


SHOUT = VerbSpec("shout", "Admins: say it to all", (TextArg("words", "What"),), admin="shout")
WHISPER = VerbSpec("whisper", "Say it privately", (TextArg("words", "What"),))


def core(db: Database, clock: FakeClock, per_user: int = 1000) -> Commands:
    verbs = VERBS.extended([(SHOUT, _echo), (WHISPER, _echo)])
    limits = Throttle(clock, per_user=Window(per_user, 60.0), public_per_channel=Window(100, 1))
    return Commands(db, Pipeline(db, clock), clock, throttle=limits, verbs=verbs)


def req(text: str, *, admin: bool = False) -> Request:
    return Request(CHAN, "7", "bo", text, admin=admin, home=True)


async def test_every_admin_action_is_audited_once(sqlite_db: Database, clock: FakeClock) -> None:
    c = core(sqlite_db, clock)
    replies = [
        await c.handle(req("shout hello", admin=True)),  # an extra verb, allowed
        await c.handle(req("shout hello")),  # refused
        await c.handle(req("deliveries", admin=True)),  # a report, allowed
        await c.handle(req("update bessemer-2021 yes=1 no=2", admin=True)),  # the pipeline's
        await c.handle(req("status bessemer-2021", admin=True)),  # not an admin verb
        await c.handle(req("pause nowhere", admin=True)),  # no such count: nothing done
    ]
    async with sqlite_db.connect() as conn:
        audit = list(reversed(await audit_rows.recent(conn)))
    assert [r.ok for r in replies] == [True, False, True, True, True, False]
    assert replies[1].text == "Error: only admins can shout; ask an admin of this workspace"
    assert [(a.action, a.allowed, a.detail) for a in audit] == [
        ("shout", True, "answered"),
        ("shout", False, "refused: not an admin"),
        ("deliveries", True, "answered"),
        ("update", True, "accepted"),
    ]
    assert audit[0].new == "shout hello"


async def test_the_table_keeps_private_verbs_private(sqlite_db: Database, clock: FakeClock) -> None:
    c = core(sqlite_db, clock)
    whispered = await c.handle(req("whisper psst"))
    assert (whispered.text, whispered.ephemeral) == ("whisper: psst", True)


async def test_a_throttled_command_is_neither_parsed_nor_audited(
    sqlite_db: Database, clock: FakeClock
) -> None:
    c = core(sqlite_db, clock, per_user=1)
    first = await c.handle(req("shout a"))
    second = await c.handle(req("shout b"))
    async with sqlite_db.connect() as conn:
        audit = await audit_rows.recent(conn)
    assert first.text.startswith("Error: only admins can shout")
    assert second.text.startswith("Slow down: at most 1 commands in 60 seconds each")
    assert [a.new for a in audit] == ["shout a"]
