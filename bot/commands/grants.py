"""``admins add|remove|list <count> [@user|@role]``: per-count grants, kept in the store.

A grant lets one more person (or everyone with a role) administer one count, inside the tenant
that owns it (:mod:`bot.commands.authority`). Adding and removing is for the count owner's
admins; listing, for whoever may administer the count. Roles are kept by id only (a mention
such as ``<@&123>`` on Discord), never by name.
"""

from __future__ import annotations

import re

from bot.commands.args import Choice, ChoiceArg, CountArg, TextArg
from bot.commands.authority import find_count, owns, refusal
from bot.commands.request import Reply
from bot.commands.verbs import Call, Verb, Verbs, VerbSpec
from bot.errors import CommandError
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


def shown(g: Grant) -> str:
    """``role 123`` or ``user 456``: replies never ping, so no mention."""
    return f"{g.kind} {g.subject}"


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
        return Reply(f"{count.id} is also administered by: " + ", ".join(map(shown, every)))
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
    name = shown(Grant(count.id, kind, who, "", s.clock.now()))
    if action == "add":
        said = "now administers" if done else "already administered"
        return Reply(f"{name} {said} {count.id}.")
    if not done:
        raise CommandError(f"{name} was not one of {count.id}'s admins")
    return Reply(f"{name} no longer administers {count.id}.")
