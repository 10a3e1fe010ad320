"""The whole configuration file as one model: the core's tables and one table per platform.

:func:`document_model` makes the model for a set of plug-ins: ``[store]``, ``[defaults]``,
``[admins]``, ``[server]``, ``[web]`` and ``[[counts]]`` (the core's), then each platform's
``[name]`` table, whose model is its plug-in's (``bot.platform.Plugin.settings``): no platform is
named here. :func:`read` checks a parsed document against it in one pass and keeps what was good.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, ValidationError, create_model, field_validator
from pydantic_core import ErrorDetails

from bot.base.egress import EgressPolicy
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import ConfigError
from bot.platform import Plugins
from bot.settings.counts import CountTable, Defaults, unique
from bot.settings.values import (
    EnvName,
    Host,
    Loc,
    Port,
    Table,
    Text,
    at_least,
    bad,
    between,
    describe,
    problems,
)
from bot.settings.web import WebConfig
from bot.store.engine import url_problem

DEFAULT_STORE = "sqlite+aiosqlite:///var/tallybot.sqlite3"


def _store_url(value: str) -> str:
    problem = url_problem(value)
    if problem is not None:
        raise bad(problem)
    return value


class Store(Table):
    """``[store]``: where the store is; its password only ever from the environment."""

    url: Annotated[Text, AfterValidator(_store_url)] = DEFAULT_STORE
    password_env: EnvName | None = None
    """The variable (or ``NAME_FILE``) holding the database password, if it needs one."""


class ServerConfig(Table):
    """``[server]``, the ops server: health, readiness, metrics and push ingest (see
    ``bot.ops.server``)."""

    host: Host = "127.0.0.1"
    port: Port = 8080
    push_secret_env: EnvName = "TALLYBOT_PUSH_SECRET"
    """The environment variable (or ``NAME_FILE``) holding the push signing secret."""
    max_body_bytes: Annotated[int, at_least(1)] = 65_536
    """The largest push body accepted; a larger one is answered 413."""


class Cluster(Table):
    """``[cluster]``: this instance among several on one PostgreSQL store (``bot.cluster``)."""

    instance_id: Text | None = None
    """This instance's id (``$TALLYBOT_INSTANCE_ID`` wins); default ``HOST-PID-RANDOM``."""
    claim_seconds: Annotated[float, between(2.0, 3600.0, " seconds")] = 30.0
    """How long a claim on deliveries, and the lease on a platform's rate budget, last unless
    renewed; a dead instance's deliveries and budget are taken over this long after it died
    (PostgreSQL only)."""
    shard_lease_seconds: Annotated[float, between(1.5, 3600.0, " seconds")] = 30.0
    """How long a gateway shard's lease lasts unless renewed (every third of it); a dead
    instance's shards are taken over within this plus a third (PostgreSQL only)."""


class Admins(Table):
    """``[admins]``: where admin notices go. Who is an admin is each platform's own setting, in
    its own table (``[discord] admin_users``, ...), applied by its admin policy."""

    plugins: ClassVar[Plugins] = Plugins(())
    """The platforms an alert may name (set per document by :func:`document_model`)."""

    alerts: tuple[ChannelRef, ...] = ()

    @field_validator("alerts", mode="plain")
    @classmethod
    def _alerts(cls, value: object) -> tuple[ChannelRef, ...]:
        if not isinstance(value, list | tuple):
            raise bad(f"expected a list, got {describe(value)}")
        refs: list[ChannelRef] = []
        found: list[tuple[Loc, str]] = []
        for i, item in enumerate(value):
            try:
                refs.append(item if isinstance(item, ChannelRef) else cls._ref(item))
            except ValueError as exc:
                found.append(((i,), str(exc)))
        problems("alerts", found)
        return tuple(refs)

    @classmethod
    def _ref(cls, text: object) -> ChannelRef:
        examples = [repr(p.channel_example) for p in cls.plugins.values() if p.channel_example]
        shapes = " or ".join(examples) or "'PLATFORM:WORKSPACE/CHANNEL'"
        if not isinstance(text, str) or ":" not in text or "/" not in text.partition(":")[2]:
            raise ValueError(f"{describe(text)} should look like {shapes}")
        platform, rest = text.split(":", 1)
        workspace, channel = rest.split("/", 1)
        if platform not in cls.plugins:
            raise ValueError(cls.plugins.unknown(platform))
        return ChannelRef(Platform(platform), workspace, channel)


def _hosts(value: tuple[str, ...]) -> tuple[str, ...]:
    try:
        EgressPolicy(allowed_hosts=value)
    except ConfigError as exc:
        raise bad(str(exc)) from None
    return value


class ChatSources(Table):
    """``[chat_sources]``: where a source URL typed in chat may point (never inside the
    operator's network, whatever this says: ``bot.base.egress``)."""

    allowed_hosts: Annotated[tuple[str, ...], AfterValidator(_hosts)] | None = None
    """Only these hosts (``feeds.example.org``, ``*.example.org``); unset: any public host."""

    def policy(self) -> EgressPolicy:
        return EgressPolicy(allowed_hosts=self.allowed_hosts)


class Document(Table):
    """The core's tables; :func:`document_model` adds the platforms'."""

    store: Store = Store()
    defaults: Defaults = Defaults()
    admins: Admins = Admins()
    server: ServerConfig | None = None
    web: WebConfig | None = None
    chat_sources: ChatSources = ChatSources()
    cluster: Cluster = Cluster()
    counts: Annotated[tuple[CountTable, ...], AfterValidator(unique)] = ()


def document_model(plugins: Plugins) -> type[Document]:
    """The model of a file read with ``plugins``: a table for each of them."""
    moved = {old: f"[{p.name}] {new}" for p in plugins.values() for old, new in p.moved.items()}
    admins: type[Admins] = type(
        "Admins",
        (Admins,),
        {
            "__module__": __name__,
            "__doc__": Admins.__doc__,
            "plugins": plugins,
            "moved": moved,
            "moved_why": " each platform's admins are set in its own table",
        },
    )
    tables: dict[str, Any] = {name: (p.settings | None, None) for name, p in plugins.items()}
    return create_model(
        "Document", __base__=Document, __module__=__name__, admins=(admins, admins()), **tables
    )


def read(model: type[Document], raw: Mapping[str, Any]) -> tuple[Document, list[ErrorDetails]]:
    """``raw`` checked against ``model``: every problem, and the document as far as it is
    good (a count with a problem left out, a key with a problem at its default)."""
    try:
        return model.model_validate(raw), []
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    good: Any = _without(raw, errors)
    for _ in range(4):  # each round leaves out more; a table at last, the document at worst
        try:
            return model.model_validate(good), errors
        except ValidationError as exc:
            good = _without(good, exc.errors(include_url=False), whole=True)
    return model(), errors


def _without(raw: Mapping[str, Any], errors: list[ErrorDetails], whole: bool = False) -> Any:
    """``raw`` without the counts and keys that have ``errors`` (or their whole table)."""
    doc = {k: dict(v) if isinstance(v, Mapping) else v for k, v in raw.items()}
    bad_counts: set[object] = set()
    for error in errors:
        table, *rest = error["loc"] or ("",)
        if table == "counts" and rest and isinstance(doc.get("counts"), list):
            bad_counts.add(rest[0])
        elif rest and not whole and isinstance(doc.get(str(table)), dict):
            doc[str(table)].pop(str(rest[0]), None)
        else:
            doc.pop(str(table), None)
    if bad_counts:
        doc["counts"] = [c for i, c in enumerate(doc["counts"]) if i not in bad_counts]
    return doc
