"""The table of verbs: what each command is called, takes, says of itself and is carried out by.

One :class:`VerbSpec` per verb: its name, a one-line summary (a slash command's description, a
menu's entry), its arguments (:mod:`bot.commands.args`), whether it needs an admin (and the
words for "only admins can ..."), and whether its answer may be shown to the channel. A
:class:`Verbs` table holds the specs with the handler registered for each::

    verbs = Verbs()

    @verbs.verb(VerbSpec("history", "A count's last updates", (CountArg(),)))
    async def history(call: Call) -> Reply: ...

The grammar (:meth:`Verbs.parse`), the usage lines and ``help`` come from the table, and so do
every platform's commands: Discord's ``/count`` subcommands, Slack's help, Telegram's menu. A new
verb is a spec and a handler; no adapter changes. The built-in verbs are
:data:`bot.commands.builtin.VERBS`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta, tzinfo
from enum import StrEnum

from bot.base.clock import Clock
from bot.base.egress import EgressPolicy
from bot.charts.chart import ChartCache
from bot.commands.args import Arg, Command, CountArg, Option, Value
from bot.commands.forms import Form
from bot.commands.reports import Health
from bot.commands.request import Reply, Request
from bot.delivery.rehearsal import Rehearsals
from bot.domain.schedule import DEFAULT_REMIND
from bot.domain.subscription import Platform
from bot.errors import CommandError
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.web.public import PageLink, no_link

DEFUSERS = re.compile("[\u200b\u2060\ufeff]")
"""The invisible characters the surfaces put into what they show so that nothing in it pings or
links (Discord's and Slack's zero-width space, Telegram's word joiner, U+FEFF): a command
copied from the bot's own words carries them, and they are never part of a command."""


def pasted(text: str) -> str:
    """``text`` as typed, without the defusing characters a copy of the bot's words carries:
    ``mention=@\\u200b1175…`` or ``threshold=2/\\u20603`` read as ``mention=@1175…`` and
    ``threshold=2/3``."""
    return DEFUSERS.sub("", text)


class Verb(StrEnum):
    """The built-in verbs' names (their specs are :data:`bot.commands.builtin.VERBS`)."""

    SUBSCRIBE = "subscribe"
    UNSUBSCRIBE = "unsubscribe"
    LIST = "list"
    STATUS = "status"
    HISTORY = "history"
    CHART = "chart"
    HELP = "help"
    UPDATE = "update"
    CORRECT = "correct"
    PAUSE = "pause"
    RESUME = "resume"
    FINAL = "final"
    DELIVERIES = "deliveries"
    CREATE = "create"
    EDIT = "edit"
    ARCHIVE = "archive"
    DELETE = "delete"
    ADMINS = "admins"
    APIKEY = "apikey"
    ALERTS = "alerts"
    REHEARSE = "rehearse"
    FOLLOW = "follow"
    UNFOLLOW = "unfollow"
    FOLLOWING = "following"
    SCHEDULE = "schedule"


NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
"""A verb's name: what a Discord subcommand and a Telegram command may both be called."""
SUMMARY_MOST = 100
"""Discord's limit on a command's description (Telegram's is 256)."""


@dataclass(frozen=True, slots=True)
class VerbSpec:
    """One verb (see the module docstring)."""

    name: str
    summary: str
    """One line: what it does (a slash command's description, a menu's entry)."""
    args: tuple[Arg, ...] = ()
    admin: str | None = None
    """What it does, for "only admins can ..."; None: anyone may."""
    public: bool = False
    """Its answer may be shown to the channel (its handler says which answers are); every other
    answer, and every error, is shown only to the person who asked."""
    audits_itself: bool = False
    """An admin verb whose handler writes its own audit entry when it is allowed (manual figures
    go through the pipeline, which records the figures before and after)."""
    changes_channel: bool = False
    """It changes what the channel gets (``subscribe``): only for those the platform lets
    manage the channel (``Request.channel_admin``)."""
    on_count: bool = True
    """An admin verb whose count must exist and be the person's to administer (``create``
    names a count that does not exist yet)."""
    instant: bool = False
    """Answered without the store: a platform that must acknowledge first may answer at once."""
    form: Form | None = None
    """Its form, for a platform that has forms: given without options (but the count, for a
    form about a count: ``Form.for_count``), the verb opens it."""

    def __post_init__(self) -> None:
        if not NAME.match(self.name):
            raise ValueError(f"verb name {self.name!r}: lowercase a-z, 0-9 and _, at most 32")
        if not 0 < len(self.summary) <= SUMMARY_MOST:
            raise ValueError(f"verb {self.name}: a summary of 1 to {SUMMARY_MOST} characters")
        kinds = [type(a) for a in self.args]
        if len(set(kinds)) != len(kinds):
            raise ValueError(f"verb {self.name}: at most one argument of each kind")
        if self.form is not None and self.form.for_count and CountArg not in kinds:
            raise ValueError(f"verb {self.name}: a form about a count needs the count argument")

    @property
    def usage(self) -> str:
        """``update <count> yes=463 no=1100 [void=N] ...``."""
        return " ".join([self.name, *(a.usage for a in self.args)])

    def usage_line(self) -> str:
        return f"usage: {self.usage}"

    def options(self) -> tuple[Option, ...]:
        """Its typed options, required ones first (as Discord wants them)."""
        every = [o for a in self.args for o in a.options()]
        return tuple(sorted(every, key=lambda o: not o.required))

    def parse(self, words: list[str]) -> Command:
        """The command that ``words`` (what follows the verb) describe."""
        usage = self.usage_line()
        if not self.args and words:
            raise CommandError(f"{self.name} takes nothing after it; {usage}")
        command = Command(self.name)
        for arg in self.args:
            command, words = arg.take(command, words, usage)
        if words:
            only = self.args[0] if len(self.args) == 1 else None
            only_count = isinstance(only, CountArg) and only.required
            raise CommandError(
                f"{self.name} takes only the count; {usage}" if only_count else usage
            )
        return command

    def opens_form(self, words: list[str]) -> bool:
        """Whether ``words`` (what follows the verb) ask for its form: nothing, or only the
        count for a form about a count."""
        if self.form is None:
            return False
        return len(words) == (1 if self.form.for_count else 0)

    def form_command(self, words: list[str]) -> Command:
        """The command that asks for its form (``words`` as :meth:`opens_form` takes them)."""
        if not self.opens_form(words):
            raise CommandError(self.usage_line())
        if not words:
            return Command(self.name)
        count = next(a for a in self.args if isinstance(a, CountArg))
        return count.take(Command(self.name), words, self.usage_line())[0]

    def line(self, values: Mapping[str, Value]) -> str:
        """The text-grammar line typed options describe: ``/count update count:b figures:"yes
        = 463, no=1,100" challenged:505`` -> ``update b yes=463 no=1,100 challenged=505``."""
        return " ".join([self.name, *(w for a in self.args for w in a.words(values))])


async def _unchanged(count_id: str) -> None:
    return None


@dataclass(frozen=True, slots=True)
class Services:
    """What handlers work with."""

    db: Database
    pipeline: Pipeline
    clock: Clock
    health: Health
    on_queued: Callable[[set[Platform]], None]
    charts: ChartCache
    verbs: Verbs
    page_link: PageLink = no_link
    """A public count's page, linked from ``status`` (``bot.web.public``)."""
    count_changed: Callable[[str], Awaitable[None]] = _unchanged
    """Called once a count was made, changed, archived or deleted in chat (the app's sources
    and scheduler follow it at once)."""
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    """Where a source URL typed in chat may point (``[chat_sources]``)."""
    rehearsals: Rehearsals | None = None
    """The running adapters' rehearsals (``rehearse``); None: no adapters to rehearse with."""
    zone: tzinfo | None = None
    """``[defaults] timezone``: the zone of a time typed without one (``schedule``); None: such
    a time is refused."""
    remind_before: timedelta = DEFAULT_REMIND
    """``[defaults] remind_before``: how long before a scheduled time its reminder goes."""


@dataclass(frozen=True, slots=True)
class Call:
    """One command on its way through the chain: who asked, what they asked for, and with what
    it is carried out."""

    request: Request
    spec: VerbSpec
    command: Command
    services: Services


Handler = Callable[[Call], Awaitable[Reply]]


@dataclass(frozen=True, slots=True)
class Entry:
    spec: VerbSpec
    handler: Handler


class Verbs:
    """Specs and their handlers, in the order ``help`` lists them."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._entries: dict[str, Entry] = {}
        for entry in entries:
            self.register(entry.spec, entry.handler)

    def register(self, spec: VerbSpec, handler: Handler) -> None:
        if spec.name in self._entries:
            raise ValueError(f"verb {spec.name!r} is registered twice")
        self._entries[spec.name] = Entry(spec, handler)

    def verb(self, *specs: VerbSpec) -> Callable[[Handler], Handler]:
        """Register the decorated handler for each of ``specs``."""

        def register(handler: Handler) -> Handler:
            for spec in specs:
                self.register(spec, handler)
            return handler

        return register

    def extended(self, more: Iterable[tuple[VerbSpec, Handler]]) -> Verbs:
        """A copy of this table with more verbs."""
        table = Verbs(self._entries.values())
        for spec, handler in more:
            table.register(spec, handler)
        return table

    def __iter__(self) -> Iterator[VerbSpec]:
        return (e.spec for e in self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __getitem__(self, name: str) -> VerbSpec:
        return self._entries[name].spec

    def handler(self, name: str) -> Handler:
        return self._entries[name].handler

    def parse(self, text: str, *, form: bool = False) -> Command:
        """Parse one command line (without the platform's ``/count`` prefix); an empty line
        asks for help. ``form``: the line asks for the verb's form (``VerbSpec.form_command``)."""
        words = pasted(text).strip().split()
        if not words:
            return Command(Verb.HELP)
        head = words[0].lower()
        entry = self._entries.get(head)
        if entry is None:
            known = ", ".join(self._entries)
            raise CommandError(f"unknown command {head!r}; try one of: {known}")
        if form:
            return entry.spec.form_command(words[1:])
        return entry.spec.parse(words[1:])

    def needs_admin(self, text: str, *, form: bool = False) -> bool:
        """Whether ``text`` is an admin command, or asks for an admin verb's form (``form``):
        worth asking the platform who is an admin; unreadable text is not (the core answers it
        with the error)."""
        try:
            return self[self.parse(text, form=form).verb].admin is not None
        except (CommandError, ValueError):
            return False

    def help(self) -> str:
        return "Commands:\n" + "\n".join(f"  {spec.usage}" for spec in self)
