"""``admins add|remove|list <count> [@user|@role]``: per-count grants, kept in the store; and
``apikey create|revoke|list``: a place's keys for the push API (``bot.store.api_keys``).

A grant lets one more person (or everyone with a role) administer one count, inside the tenant
that owns it (:mod:`bot.commands.authority`). Adding and removing is for the count owner's
admins; listing, for whoever may administer the count. Roles are kept by id only (a mention
such as ``<@&123>`` on Discord), never by name.
"""

from __future__ import annotations

import re

from bot.commands.args import Choice, ChoiceArg, CountArg, TextArg
from bot.commands.authority import find_count, owns, refusal
from bot.commands.request import Reply, Request, group_called, user_called
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.errors import CommandError, NotAuthorized
from bot.store import api_keys as key_rows
from bot.store import grants as grant_rows
from bot.store.grants import Grant, GrantKind

VERBS = Verbs()
"""The verbs of this module (registered in :data:`bot.commands.builtin.VERBS`)."""

ROLE = re.compile(r"^<@&(\d{1,20})>$")
USER = re.compile(r"^<@!?([A-Za-z0-9]{1,32})(?:\|[^>]*)?>$|^([A-Za-z0-9]{1,32})$")
"""A user: a Discord or Slack mention (``<@123>``, ``<@!123>``, ``<@U024BE7LH|bo>``) or an id."""

ACTION = ChoiceArg(
    "action",
    (
        Choice("list", "list the count's admins", "who else administers the count"),
        Choice("add", "add an admin", "add a user or role"),
        Choice("remove", "remove an admin", "remove a user or role"),
    ),
    default="list",
    description="What to do (default: list)",
)


def subject(text: str) -> tuple[GrantKind, str]:
    """``<@&123>`` -> a role; ``<@123>``, ``<@U024BE7LH|bo>``, ``123`` -> a user."""
    word = text.strip()
    role = ROLE.match(word)
    if role:
        return GrantKind.ROLE, role.group(1)
    user = USER.match(word)
    if user:
        return GrantKind.USER, user.group(1) or user.group(2)
    raise CommandError(
        f"{word[:40]!r} is not a user or a role: mention them (@name) or give their id"
    )


async def shown(request: Request, kind: GrantKind, who: str) -> str:
    """A grant's subject by name where the platform says it (``Ada``, ``the role
    Organisers``), else ``user 456`` or ``the role 123``: plain text, never a mention."""
    if kind is GrantKind.ROLE:
        return await group_called(request, who)
    return await user_called(request, who)


@VERBS.verb(
    VerbSpec(
        Verb.ADMINS,
        "Admins: who else may administer a count",
        (ACTION, CountArg(), TextArg("who", "The user or role (@mention)", required=False)),
        admin="manage a count's admins",
    )
)
async def admins(call: Call) -> Reply:
    s, request, command = call.services, call.request, call.command
    assert command.count is not None
    count = await find_count(s.db, command.count, request)
    action = command.choice or "list"
    if action == "list":
        async with s.db.connect() as conn:
            every = await grant_rows.for_count(conn, count.id)
        if not every:
            return Reply(f"{count.id}: only its owner's admins; nobody added.")
        names = [await shown(request, g.kind, g.subject) for g in every]
        return Reply(f"{count.id} is also administered by: " + ", ".join(names))
    if not owns(request, count):
        raise refusal(request, count, "add or remove a count's admins")
    if command.text is None:
        raise CommandError(f"whom? {call.spec.usage_line()}")
    kind, who = subject(command.text)
    async with s.db.begin() as conn:
        if action == "add":
            grant = Grant(count.id, kind, who, request.actor, s.clock.now())
            done = await grant_rows.grant(conn, grant)
        else:
            done = await grant_rows.revoke(conn, count.id, kind, who)
    name = await shown(request, kind, who)
    if action == "add":
        said = "now administers" if done else "already administered"
        return Reply(f"{name} {said} {count.id}.")
    if not done:
        raise CommandError(f"{name} was not one of {count.id}'s admins")
    return Reply(f"{name} no longer administers {count.id}.")


KEY_ACTION = ChoiceArg(
    "action",
    (
        Choice("list", "list this place's keys", "this place's live keys"),
        Choice("create", "make a key (shown once)", "make a key for the push API"),
        Choice("revoke", "revoke a key", "revoke a key by its number"),
    ),
    default="list",
    description="What to do (default: list)",
)


@VERBS.verb(
    VerbSpec(
        Verb.APIKEY,
        "Admins: keys for pushing this place's counts (create, revoke, list)",
        (KEY_ACTION, TextArg("key", "The key's number (to revoke)", required=False)),
        admin="manage API keys",
        on_count=False,
    )
)
async def apikey(call: Call) -> Reply:
    s, request, command = call.services, call.request, call.command
    if not request.tenant_admin:
        raise NotAuthorized(
            f"only admins of this {request.place} can manage its API keys; ask one of them"
        )
    owner, action = request.tenant, command.choice or "list"
    if action == "list":
        async with s.db.connect() as conn:
            keys = await key_rows.for_owner(conn, owner)
        if not keys:
            return Reply(f"This {request.place} has no API keys: apikey create makes one.")
        lines = [f"#{k.id}, made by {k.created_by} on {k.created_at:%Y-%m-%d}" for k in keys]
        return Reply("API keys of this " + request.place + ":\n" + "\n".join(lines))
    if action == "create":
        if not request.private_replies:
            raise CommandError(
                f"a new key would show to everyone in this {request.place}: tallybot makes "
                "API keys only where it can answer you alone"
            )
        async with s.db.begin() as conn:
            key, token = await key_rows.create(conn, owner, by=request.actor, at=s.clock.now())
        return Reply(
            f"API key #{key.id} for the counts of this {request.place} (shown only now, so "
            f"copy it): {token}\nSend it as: Authorization: Bearer <key>. "
            f"Revoke it with: apikey revoke {key.id}"
        )
    number = (command.text or "").strip().lstrip("#")
    if not number.isdigit():
        raise CommandError(f"which key? {call.spec.usage_line()} (apikey list shows them)")
    async with s.db.begin() as conn:
        done = await key_rows.revoke(conn, int(number), owner, at=s.clock.now())
    if not done:
        raise CommandError(f"this {request.place} has no live key #{number}")
    return Reply(f"Revoked API key #{number}: it is refused from now on.")
