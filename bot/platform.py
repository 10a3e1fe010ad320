"""The platform contract: what a chat platform gives the core, and how the core finds it.

A platform is a plug-in: a package under ``adapters/`` (or any installed distribution) that
registers one :class:`Plugin` under the ``tallybot.adapters`` entry-point group::

    [project.entry-points."tallybot.adapters"]
    telegram = "adapters.telegram.plugin:PLUGIN"

The entry point's name is the platform's name: the name of its configuration table
(``[telegram]``), of its channels in the store and in ``[admins] alerts``
(``telegram:CHAT/THREAD``), and of its ``/readyz`` checks. Nothing in ``bot/`` names a platform.

A plug-in describes (:class:`Plugin`):

* ``settings``: the model of its own ``[name]`` table (a :class:`PlatformTable`, pydantic):
  checked with the rest of the file in one pass (:mod:`bot.settings`), so its problems read
  ``FILE: name.key: PROBLEM``, all of them at once, with a did-you-mean for a misspelt key; a
  key is one line in the model. The validated model is the settings the adapter is built
  with; its ``on()`` says whether the table turns the platform on (``[console] enabled``). The
  table holds the platform's admin settings too (``[discord] admin_users``, ...).
* ``secrets``: the environment variables (or ``NAME_FILE`` files) it needs for these settings,
  each required or optional (:class:`SecretNeed`): ``tallybot check-config`` checks them for
  every enabled platform, and their values are scrubbed from every log line.
* ``admins``: its admin policy (:class:`AdminPolicy`), built from its settings. **Deny by
  default**: a plug-in that gives none makes nobody an admin on its platform.
* ``build(settings, context) -> Adapter``: the adapter, from its settings and the
  :class:`Context` every adapter gets (the command handler, the clock, the command limits, its
  admin policy and secrets, the store for reads, the display zone), and
  ``context.sent_ledger(name)``: where it keeps what it knows of its own messages across
  restarts (for an exactly-once repair), None without a store; ``context.channel_moved``:
  what it calls when the platform gives a channel a new id.
* optionally ``verbs``: ``/count`` verbs it adds on every platform (a spec and its handler each),
  from its settings (the webhook plug-in's ``webhook``, where the operator allows it).
* optionally ``commands``: subcommands of the ``tallybot`` CLI (Discord's ``invite``).
* optionally ``doctor``: what ``tallybot doctor`` checks on the platform without posting
  (:mod:`bot.ops.checkup`): the token, the intents or scopes, each subscribed channel's rights.
* optionally ``tables``: its own tables (:class:`Tables`: a MetaData, a folder of Alembic
  revisions on a branch of its own), migrated with the core's whenever the store opens.

The adapter (:class:`bot.delivery.adapter.Adapter`, re-exported here) is an async context manager
with defaults for everything but delivery: subclasses implement ``post``, ``edit`` and
``find_posted`` (see their docstrings for the exactly-once rules) and set ``platform``,
``limits`` and ``dedup_window``; they override ``aopen``/``aclose`` (the hooks of
:class:`bot.base.lifecycle.Closing`, which ``async with`` calls) to connect and disconnect,
``health()`` to say truthfully whether the platform is reachable (``/readyz``),
``http_routes()`` for routes the ops server mounts, ``serve()`` for a foreground loop.
Commands flow the other way: the adapter turns what a user typed into a request with
:meth:`Context.request` (which asks the admin policy) and hands it to ``context.handle``.

Adding a platform ``x``: ``adapters/x/`` (its plug-in, settings, policy, adapter), one line
under ``[project.entry-points."tallybot.adapters"]`` in ``pyproject.toml``, its table in
``config/example.toml`` and in ``docs/reference/configuration.md``
(``docs/explanation/adding-a-platform.md``); no change in ``bot/``. Tests may skip the entry
point and pass plug-ins explicitly (``Plugins([...])`` to ``bot.settings.loader.parse``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from functools import cache
from importlib.metadata import entry_points
from typing import IO, TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from bot.base.clock import Clock, Sleep, SystemClock
from bot.base.egress import EgressPolicy, EgressRefused, GuardedSession
from bot.base.retry import retry_after_header
from bot.cluster.identity import Instance
from bot.cluster.lease import shared
from bot.cluster.shards import IDENTIFY_WINDOW, SessionStarts, ShardLeases
from bot.commands.args import CountArg, Option, OptionKind, TextArg, Value
from bot.commands.authority import visible_counts
from bot.commands.builtin import VERBS
from bot.commands.forms import Form, Opening
from bot.commands.inflight import BUSY, GRACE_S, Backlog, InFlight, InOrder, Place, guarded
from bot.commands.policy import DENY, AdminPolicy, Asker, Verdict, deny_all
from bot.commands.request import Follows, Inbox, Mentions, Names, Reply, Request
from bot.commands.throttle import Throttle
from bot.commands.verbs import Call, Verbs, VerbSpec, pasted
from bot.delivery.adapter import Adapter, Earlier, Health
from bot.delivery.memberships import Memberships
from bot.delivery.pacing import (
    PACED,
    UNLIMITED,
    Bucket,
    Limits,
    LimitSaid,
    Pace,
    Route,
    Window,
    answered,
    unpaced,
)
from bot.delivery.replies import Replies
from bot.delivery.shared import OutsideShare
from bot.domain.message import (
    Attachment,
    ChoiceLine,
    Message,
    Moment,
    Notice,
    Outgoing,
    Timed,
    utc_time,
)
from bot.domain.render_text import render, show
from bot.domain.safe_text import clean
from bot.domain.subscription import ChannelRef, Extra, Mode, Platform
from bot.domain.times import Zone, unix
from bot.domain.utf16 import fitting, units
from bot.domain.words import noun
from bot.errors import (
    ChannelMoved,
    CommandError,
    ConfigError,
    DeliveryError,
    MessageGone,
    NotAllowedHere,
    PermanentDeliveryError,
    RateLimited,
    StoreError,
    TallybotError,
    TransientDeliveryError,
)
from bot.ops.checkup import Checkup, Problem, Subscribed
from bot.ops.signing import headers as signed_headers
from bot.settings.secrets import Secret
from bot.settings.values import (
    LISTS,
    Filled,
    Flag,
    Host,
    HttpUrl,
    Ids,
    Loc,
    PlatformTable,
    Port,
    Text,
    bad,
    between,
    describe,
    one_of,
    problems,
    suggest,
    whole_between,
)
from bot.settings.values import Limits as LimitsSetting
from bot.store import Database, request_receipts
from bot.store import follows as follow_rows
from bot.store.audit import AuditEntry, record
from bot.store.channel_moves import move_channel
from bot.store.migrations import Tables
from bot.store.schema import NAMING
from bot.store.sent_ledger import Copy, Doubt, Known, SentLedger
from bot.store.subscriptions import subscribe, unsubscribe
from bot.store.types import Id, UTCDateTime
from bot.web.standing import document as standing
from bot.web.standing import encode as standing_json

if TYPE_CHECKING:
    from prompt_toolkit.input import Input
    from prompt_toolkit.output import Output

__all__ = [
    "BUSY",
    "GRACE_S",
    "GROUP",
    "IDENTIFY_WINDOW",
    "LISTS",
    "NAMING",
    "PACED",
    "UNLIMITED",
    "VERBS",
    "Adapter",
    "AdminPolicy",
    "Asker",
    "Attachment",
    "AuditEntry",
    "Backlog",
    "Bucket",
    "Call",
    "ChannelMoved",
    "ChannelRef",
    "Checkup",
    "ChoiceLine",
    "CliCommand",
    "Clock",
    "CommandError",
    "ConfigError",
    "Context",
    "Copy",
    "CountArg",
    "Database",
    "DeliveryError",
    "Doubt",
    "Earlier",
    "EgressPolicy",
    "EgressRefused",
    "Extra",
    "Filled",
    "Flag",
    "Follows",
    "Form",
    "GuardedSession",
    "Health",
    "Host",
    "HttpUrl",
    "Id",
    "Ids",
    "InFlight",
    "InOrder",
    "Inbox",
    "Instance",
    "Known",
    "LimitSaid",
    "Limits",
    "LimitsSetting",
    "Loc",
    "Memberships",
    "Mentions",
    "Message",
    "MessageGone",
    "Mode",
    "Moment",
    "Names",
    "NotAllowedHere",
    "Notice",
    "Opening",
    "Option",
    "OptionKind",
    "Outgoing",
    "OutsideShare",
    "Pace",
    "PermanentDeliveryError",
    "Place",
    "Platform",
    "PlatformTable",
    "Plugin",
    "Plugins",
    "Port",
    "Problem",
    "RateLimited",
    "Replies",
    "Reply",
    "Request",
    "Route",
    "Secret",
    "SecretNeed",
    "SentLedger",
    "SessionStarts",
    "ShardLeases",
    "Sleep",
    "StoreError",
    "Subscribed",
    "SystemClock",
    "Tables",
    "TallybotError",
    "Terminal",
    "TerminalPlatform",
    "Text",
    "TextArg",
    "Throttle",
    "Timed",
    "TransientDeliveryError",
    "UTCDateTime",
    "Value",
    "VerbSpec",
    "Verbs",
    "Verdict",
    "Window",
    "Zone",
    "answered",
    "bad",
    "between",
    "clean",
    "describe",
    "fitting",
    "guarded",
    "noun",
    "one_of",
    "pasted",
    "problems",
    "record",
    "render",
    "request_receipts",
    "retry_after_header",
    "shared",
    "show",
    "signed_headers",
    "standing",
    "standing_json",
    "subscribe",
    "units",
    "unix",
    "unpaced",
    "unsubscribe",
    "utc_time",
    "visible_counts",
    "whole_between",
]

log = logging.getLogger(__name__)

GROUP = "tallybot.adapters"
"""The entry-point group plug-ins register under."""

S = TypeVar("S", bound=PlatformTable)
Handler = Callable[[Request], Awaitable[Reply]]


# ----------------------------------------------------------------------------- context


@dataclass(frozen=True, slots=True)
class Context:
    """What every adapter is built with, besides its own settings."""

    handle: Handler
    """Carries out a command and answers it (``bot.commands.handler.Commands.handle``); never
    raises."""
    clock: Clock
    throttle: Throttle
    """The command limits, for an adapter that must know before answering whether the reply
    may be public (Discord defers publicly or privately)."""
    admins: AdminPolicy = DENY
    """The platform's admin policy, from its settings (deny by default)."""
    place: str = "workspace"
    """What the platform calls the place a command comes from ("server", "workspace")."""
    secrets: Mapping[str, Secret] = field(default_factory=dict)
    """The secrets the plug-in asked for (:attr:`Plugin.secrets`) that are set, by name."""
    store: Database | None = None
    """The store, for reads an adapter makes itself (Discord's autocomplete); None in tests."""
    zone: tzinfo | None = None
    """``[defaults] timezone``, where times cannot be shown in each reader's own zone."""
    ops_server: bool = False
    """An ops server runs and mounts the adapter's ``http_routes()`` (else it serves its own)."""
    verbs: Verbs = VERBS
    """The verbs ``handle`` carries out (``bot.commands.verbs``): an adapter builds its commands,
    help and menus from them, and asks them which answers may be public."""
    backlog: Backlog = field(default_factory=Backlog)
    """The commands under way in the app, shared by its adapters
    (``bot.commands.inflight.Backlog``: its store is theirs, and so the pace its commands go at);
    an adapter's own in tests. Never shared by two apps."""
    instance: Instance | None = None
    """This instance among those of its store (``bot.cluster``): where a sharded platform
    records the shards it runs (``bot.cluster.shards``); None in tests."""
    shard_lease_seconds: float = 30.0
    """``[cluster] shard_lease_seconds``: how long a shard's lease lasts unless renewed."""

    def sent_ledger(self, platform: Platform) -> SentLedger | None:
        """Where ``platform``'s adapter keeps what it knows of its own messages across restarts
        (``bot.store.sent_ledger``, for an exactly-once repair); None without a store."""
        return None if self.store is None else SentLedger(self.store, platform, self.clock)

    async def channel_moved(self, old: ChannelRef, new: ChannelRef, why: str) -> int:
        """The platform says ``old`` has the new id ``new`` (a Telegram group became a
        supergroup): its subscriptions and open deliveries move there, audited
        (``bot.store.channel_moves``); how many subscriptions moved (0 without a store)."""
        if self.store is None:
            return 0
        async with self.store.begin() as conn:
            return await move_channel(conn, old, new, at=self.clock.now(), why=why)

    async def person_left(self, platform: Platform, workspace: str, user_id: str, why: str) -> int:
        """The platform says ``user_id`` left ``workspace`` (a Slack member deactivated): the
        follows they made there end, each audited and logged once, their queued DMs cancelled
        (``bot.store.follows.left``); how many (0 without a store, or when they followed
        nothing there). Follows are the person's business: nobody is told."""
        if self.store is None:
            return 0
        async with self.store.begin() as conn:
            dropped = await follow_rows.left(
                conn, platform, workspace, user_id, at=self.clock.now(), why=why
            )
        for made in dropped:
            log.warning("unfollowed %s:%s from %s: %s", platform, user_id, made.count_id, why)
        return len(dropped)

    def secret(self, name: str) -> Secret:
        """A secret the plug-in declared as required (checked before the adapter is built)."""
        found = self.secrets.get(name)
        if found is None:
            raise ConfigError(f"{name} is not set: export {name}=... or {name}_FILE=/path")
        return found

    def request(
        self,
        channel: ChannelRef,
        user_id: str,
        user_name: str,
        text: str,
        *,
        platform_admin: bool = False,
        roles: frozenset[str] = frozenset(),
        role_ids: frozenset[str] = frozenset(),
        channel_admin: bool = True,
        supports: frozenset[Extra] = frozenset(),
        mentions: Mentions | None = None,
        names: Names | None = None,
        follows: Follows | None = None,
        form: bool = False,
        inbox: Inbox | None = None,
    ) -> Request:
        """The request for a command typed by ``user_id`` in ``channel``, with the admin
        policy's verdict on them (an admin nowhere unless the policy says so). ``roles``: their
        roles' ids and names, for the policy; ``role_ids``: the ids alone, which per-count
        grants may name (a name is anyone's to give a role); the subscription options the
        platform ``supports`` and who may be pinged (``mentions``); who ids are (``names``);
        channel following (``follows``); the person's DMs (``inbox``); ``form``: the text asks
        for the verb's form (``Request.form``)."""
        verdict = self.admins.verdict(Asker(user_id, channel.workspace, platform_admin, roles))
        return Request(
            channel,
            user_id,
            user_name,
            text,
            admin=verdict.admin,
            refusal=verdict.refusal,
            place=self.place,
            tenant_admin=verdict.tenant_admin,
            home=verdict.home,
            roles=role_ids,
            channel_admin=channel_admin,
            supports=supports,
            mentions=mentions,
            names=names,
            follows=follows,
            form=form,
            inbox=inbox,
        )


# ------------------------------------------------------------------------------ plugin


@dataclass(frozen=True, slots=True)
class SecretNeed:
    """An environment variable (or ``NAME_FILE``) a platform reads its token from."""

    name: str
    required: bool = True


@dataclass(frozen=True, slots=True)
class CliCommand:
    """A ``tallybot`` subcommand a platform adds (``tallybot invite``)."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


class Terminal(Protocol):
    """A platform that is a terminal (the console), as the demo and replays drive it: they print
    on it and take commands at its prompt (:attr:`Plugin.terminal`)."""

    def attach(self, context: Context) -> Adapter:
        """The adapter, taking typed commands through ``context``."""
        ...

    def say(self, words: str) -> None:
        """A line as it is (the demo's banner)."""
        ...

    def note(self, words: str) -> None:
        """A narrator's line."""
        ...

    def show_reply(self, reply: Reply) -> None: ...

    async def prompt(
        self,
        *,
        count_ids: Iterable[str] = (),
        input: Input | None = None,
        output: Output | None = None,
    ) -> None:
        """Take commands at the prompt until quit."""
        ...


@dataclass(frozen=True, slots=True)
class TerminalPlatform:
    """What a platform that is a terminal gives the demo and replays (``tallybot demo``)."""

    open: Callable[[IO[str] | None, tzinfo | None], Terminal]
    """A terminal writing to ``out`` (standard output if None), showing times in ``zone``."""
    channel: ChannelRef
    """Where the demo's commands come from and its alerts go."""
    replay_settings: Mapping[str, Any]
    """Its table for a replay: on, the person at it an admin."""


def _no_secrets(settings: Any) -> Sequence[Any]:
    return ()


@dataclass(frozen=True, slots=True)
class Plugin(Generic[S]):
    """One platform, as the core sees it (see the module docstring)."""

    name: str
    settings: type[S]
    """The model of its ``[name]`` table: its keys, their types and checks, its settings."""
    build: Callable[[S, Context], Adapter]
    secrets: Callable[[S], Sequence[SecretNeed]] = _no_secrets
    verbs: Callable[[S], Sequence[tuple[VerbSpec, Callable[[Call], Awaitable[Reply]]]]] = (
        _no_secrets
    )
    """Verbs it adds to ``/count`` on every platform, from its settings (none by default)."""
    secret_names: tuple[str, ...] = ()
    """Every secret name it may ever read, scrubbed from logs even before a file is read."""
    admins: Callable[[S], AdminPolicy] = deny_all
    place: str = "workspace"
    channel_example: str = ""
    """How one of its channels is written in ``[admins] alerts``: ``x:WORKSPACE/CHANNEL``."""
    moved: Mapping[str, str] = field(default_factory=dict)
    """Keys of ``[admins]`` that moved to its own table, old name to new name: an old key is
    refused with a message naming the new one."""
    needs_terminal: bool = False
    """Off (one log line says so) when standard input is not a terminal."""
    commands: tuple[CliCommand, ...] = ()
    doctor: Callable[[S, Checkup], Awaitable[list[Problem]]] | None = None
    """``tallybot doctor``'s check of the platform (:mod:`bot.ops.checkup`): with its settings and
    real tokens, without posting, what the bot would fail at there (token, intents or scopes,
    each subscribed channel's rights); None: no checks for this platform."""
    terminal: Callable[[], TerminalPlatform] | None = None
    """A platform that is a terminal (the console) gives the demo and replays what they drive
    (imported when called: the core imports no adapter)."""
    tables: Tables | None = None
    """Its own tables in the store and their Alembic branch (:mod:`bot.store.migrations`)."""

    @property
    def platform(self) -> Platform:
        return Platform(self.name)


class Plugins(Mapping[str, Plugin[Any]]):
    """The platforms a configuration is read and run with: the installed ones by default
    (:meth:`installed`), or any given list (tests)."""

    def __init__(self, plugins: Iterable[Plugin[Any]]) -> None:
        self._by_name: dict[str, Plugin[Any]] = {}
        for plugin in plugins:
            if plugin.name in self._by_name:
                raise ConfigError(f"two platforms are registered as {plugin.name!r}")
            self._by_name[plugin.name] = plugin

    @classmethod
    def installed(cls) -> Plugins:
        """Every plug-in registered under the ``tallybot.adapters`` entry points."""
        return _installed()

    def __getitem__(self, name: str) -> Plugin[Any]:
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._by_name))

    def __len__(self) -> int:
        return len(self._by_name)

    def unknown(self, name: str) -> str:
        """Why ``name`` is no platform: ``no platform 'discrod' (did you mean 'discord'?) ...``."""
        return (
            f"no platform {name!r} is installed{suggest(name, list(self))}; "
            f"platforms: {', '.join(self) or 'none'}"
        )

    def terminal(self) -> tuple[Plugin[Any], TerminalPlatform]:
        """The platform that is a terminal, for the demo and replays."""
        for plugin in self._by_name.values():
            if plugin.terminal is not None:
                return plugin, plugin.terminal()
        raise ConfigError("no platform that is a terminal (the console) is installed")

    def secret_names(self) -> list[str]:
        return [name for p in self._by_name.values() for name in p.secret_names]

    def tables(self) -> dict[str, Tables]:
        """The plug-ins' own tables, by name: the store migrates them with the core's."""
        return {n: p.tables for n, p in self._by_name.items() if p.tables is not None}


@cache
def _installed() -> Plugins:
    found: list[Plugin[Any]] = []
    for ep in entry_points(group=GROUP):
        plugin = ep.load()
        if not isinstance(plugin, Plugin) or plugin.name != ep.name:
            raise ConfigError(
                f"entry point {ep.name} = {ep.value!r} in {GROUP} is not the Plugin of a "
                f"platform named {ep.name!r}"
            )
        found.append(plugin)
    return Plugins(found)
