"""Who may see a count, and who may administer it: authority stops at the tenant's edge.

Every count has an owner (``Count.owner``): the operator (the configuration file's counts) or
the tenant it was created in, ``platform:place`` (a Discord server, a Slack workspace, a Telegram
chat, the console). A request carries what its platform's admin policy says of the person
(:class:`~bot.commands.request.Request`: ``admin`` for the operator's admins, ``tenant_admin``
for the admins of the place they ask from, ``home`` for the operator's own places).

- **Seeing** (:func:`can_see`): a public count, anywhere; a tenant's private count, only in that
  tenant; the operator's private counts, in the operator's own places and by its admins. A count
  one cannot see does not exist for them: the same "unknown count" as a typo, no hint naming it,
  no autocomplete.
- **Administering** (:func:`may_administer`): the operator's counts, by the operator's admins
  (and grantees, in the operator's places); a tenant's counts, by that tenant's admins and the
  count's grantees, from inside that tenant only. Nothing in one tenant confers anything in
  another. Deny by default.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from bot.commands.request import Request
from bot.domain.model import OPERATOR, Count
from bot.errors import CommandError, NotAuthorized, NotTheirs
from bot.store import Database
from bot.store import counts as count_rows
from bot.store import grants as grant_rows
from bot.store.grants import Grant, GrantKind


def can_see(request: Request, count: Count) -> bool:
    """Whether ``count`` exists for whoever sent ``request``."""
    if count.owner == request.tenant:
        return True
    if count.archived:
        return False
    if count.public:
        return True
    return count.owner == OPERATOR and (request.admin or request.home)


def granted(request: Request, grants: Iterable[Grant]) -> bool:
    """Whether a grant names the person or one of their roles (role ids only)."""
    return any(
        (g.kind is GrantKind.USER and g.subject == request.user_id)
        or (g.kind is GrantKind.ROLE and g.subject in request.roles)
        for g in grants
    )


def owns(request: Request, count: Count) -> bool:
    """Whether the person is an admin of the count's owner (who may also grant and revoke)."""
    if count.owner == OPERATOR:
        return request.admin
    return count.owner == request.tenant and request.tenant_admin


def may_administer(request: Request, count: Count, grants: Iterable[Grant]) -> bool:
    """Whether the person may change ``count`` (figures, state, settings)."""
    if owns(request, count):
        return True
    if count.owner == OPERATOR:
        return request.home and granted(request, grants)
    return count.owner == request.tenant and granted(request, grants)


def refusal(request: Request, count: Count, what: str) -> NotAuthorized:
    """The refusal of ``what`` on a count the person may see but not administer. An admin of
    this place (who may not administer the operator's counts) is told the policy's own reason,
    not to ask an admin of the place they administer."""
    if count.owner == OPERATOR and request.tenant_admin:
        why = request.refusal.removeprefix("refused: ")
        return NotAuthorized(f"only the operator's admins can {what} of {count.id}: {why}")
    if count.owner == OPERATOR:
        return NotAuthorized(f"only admins can {what}; ask an admin of this {request.place}")
    return NotTheirs(
        f"only admins of the {request.place} that owns {count.id} can {what}; "
        f"ask one of them, or to be added with: admins add {count.id} @you"
    )


async def visible_counts(db: Database, request: Request) -> list[Count]:
    """The counts ``request``'s sender may see, by id (archived ones only for their owner)."""
    async with db.connect() as conn:
        every = await count_rows.all_counts(conn, archived=True)
    return [c for c in every if can_see(request, c) and (not c.archived or owns(request, c))]


async def find_count(db: Database, name: str, request: Request, *, audited: bool = False) -> Count:
    """The count called ``name`` that ``request``'s sender may see, or a CommandError naming
    close ones among those they may see (the same for a count that exists elsewhere; with
    ``audited``, that one is a :class:`NotTheirs` saying the same, for the audit log)."""
    async with db.connect() as conn:
        count = await count_rows.get(conn, name)
    if count is not None and can_see(request, count):
        return count
    unknown = await _unknown(db, name, request)
    if audited and count is not None:
        raise NotTheirs(unknown, f"refused: {count.id} is a private count of {count.owner}")
    raise CommandError(unknown)


async def _unknown(db: Database, name: str, request: Request) -> str:
    every = await visible_counts(db, request)
    ids = [c.id for c in every]
    close = difflib.get_close_matches(name, ids, n=3, cutoff=0.4)
    close += [c.id for c in every if name in c.id or name in c.title.lower()]
    hint = f"; did you mean {', '.join(dict.fromkeys(close))}?" if close else ""
    known = f" (counts: {', '.join(ids)})" if ids and not close else ""
    return f"unknown count {name!r}{hint}{known}"


async def check_admin(db: Database, request: Request, count: Count, what: str) -> None:
    """Raise :class:`NotAuthorized` unless the person may administer ``count``."""
    if owns(request, count):
        return
    async with db.connect() as conn:
        grants = await grant_rows.for_count(conn, count.id)
    if not may_administer(request, count, grants):
        raise refusal(request, count, what)


def check_place_admin(request: Request, what: str) -> None:
    """Raise :class:`NotAuthorized` unless the person administers something here (for admin
    verbs that name no count: ``deliveries``, ``create``, ``apikey``)."""
    if not (request.admin or request.tenant_admin):
        raise NotAuthorized(f"only admins can {what}; ask an admin of this {request.place}")
