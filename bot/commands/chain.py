"""The middleware chain of a command, as in bolt: steps ``async (x, call_next) -> Reply``.

On the request (before anyone knows which verb it is):

- :func:`errors`: a command is always answered: a :class:`CommandError` as its one line, anything
  unexpected logged and answered with :data:`~bot.commands.request.FAILED`;
- :func:`throttle`: beyond a person's limit, how long to wait (:mod:`bot.commands.throttle`);
- then the grammar of the verb table makes it a :class:`~bot.commands.verbs.Call`.

On the call:

- :func:`audit`: every admin action is audited once: refusals here, allowed ones here too unless
  the verb's handler writes its own entry (``VerbSpec.audits_itself``). It wraps
  :func:`authorise` so that it sees the refusal;
- :func:`authorise`: an admin verb from someone the platform's policy does not call an admin is
  refused (:class:`NotAuthorized`);
- :func:`reply`: who sees the answer: the table says which verbs may answer the channel, and a
  channel gets a public reply at most so often (else it is private);
- the verb's handler, registered in the table, runs last; or, for a request that asks for the
  verb's form (``Request.form``), :func:`opening`: the form, filled in with the count's current
  values (so a form about a count opens only for someone who may see and administer it).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from bot.commands import authority
from bot.commands.forms import Opening
from bot.commands.request import FAILED, Reply, Request
from bot.commands.throttle import Throttle
from bot.commands.verbs import Call, Services, Verb
from bot.errors import CommandError, NotAuthorized, NotTheirs
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store.audit import AuditEntry

log = logging.getLogger(__name__)

KEEPERS = (Verb.ARCHIVE, Verb.DELETE, Verb.EDIT, Verb.ADMINS)
"""The admin verbs that work on an archived count."""

T = TypeVar("T")
Next = Callable[[T], Awaitable[Reply]]
Middleware = Callable[[T, Next[T]], Awaitable[Reply]]


def chain(steps: Sequence[Middleware[T]], last: Next[T]) -> Next[T]:
    """``steps`` around ``last``: the first step is the outermost."""
    run = last
    for step in reversed(steps):
        run = _bound(step, run)
    return run


def _bound(step: Middleware[T], call_next: Next[T]) -> Next[T]:
    async def run(x: T) -> Reply:
        return await step(x, call_next)

    return run


# ------------------------------------------------------------------ on the request


async def errors(request: Request, call_next: Next[Request]) -> Reply:
    try:
        return await call_next(request)
    except CommandError as exc:
        return Reply(f"Error: {exc}", ok=False)
    except Exception:
        log.exception("command %r from %s failed", request.text[:200], request.actor)
        return FAILED


def throttle(limits: Throttle) -> Middleware[Request]:
    async def step(request: Request, call_next: Next[Request]) -> Reply:
        ticket = request.passed
        wait = ticket.wait if ticket else limits.admit(request.channel, request.user_id)
        if wait > 0:
            limit = limits.per_user
            return Reply(
                f"Slow down: at most {limit.limit} commands in {limit.seconds:g} seconds each; "
                f"try again in {math.ceil(wait)} s.",
                ok=False,
            )
        return await call_next(request)

    return step


def dispatch(services: Services, steps: Sequence[Middleware[Call]]) -> Next[Request]:
    """The last step on the request: the verb table parses it, and the call goes through
    ``steps`` to the verb's handler."""
    verbs = services.verbs

    async def handler(call: Call) -> Reply:
        if call.request.form:
            return await opening(call)
        return await verbs.handler(call.spec.name)(call)

    run = chain(steps, handler)

    async def step(request: Request) -> Reply:
        command = verbs.parse(request.text, form=request.form)
        return await run(Call(request, verbs[command.verb], command, services))

    return step


async def opening(call: Call) -> Reply:
    """The verb's form, for the count the request names (one the person may see) with its
    current values, or empty."""
    form, name = call.spec.form, call.command.count
    assert form is not None  # the form's command parses only for a verb with a form
    if not form.for_count or name is None:
        return Reply("", form=Opening.of(call.spec.name, form, None, None))
    db = call.services.db
    count = await authority.find_count(db, name, call.request)
    async with db.connect() as conn:
        source = await count_rows.source_json(conn, count.id)
    return Reply("", form=Opening.of(call.spec.name, form, count, source))


# ------------------------------------------------------------------ on the call


def audit(services: Services) -> Middleware[Call]:
    async def step(call: Call, call_next: Next[Call]) -> Reply:
        spec, request = call.spec, call.request
        if spec.admin is None:
            return await call_next(call)
        try:
            reply = await call_next(call)
        except NotAuthorized as exc:
            detail = exc.audit if isinstance(exc, NotTheirs) else request.refusal
            await _record(services, call, allowed=False, detail=detail[:500])
            raise
        if not spec.audits_itself:
            detail = "answered" if reply.ok else f"failed: {reply.text}"[:200]
            await _record(services, call, allowed=True, detail=detail)
        return reply

    return step


async def _record(services: Services, call: Call, *, allowed: bool, detail: str) -> None:
    entry = AuditEntry(
        at=services.clock.now(),
        actor=call.request.actor,
        action=call.spec.name,
        count_id=call.command.count,
        old="",
        new=call.request.text,
        allowed=allowed,
        detail=detail,
    )
    async with services.db.begin() as conn:
        await audit_rows.record(conn, entry)


def authorise(services: Services) -> Middleware[Call]:
    """An admin verb on a count goes ahead only for whoever may administer that count (and a
    count they may not see is unknown to them); one on no count, only for an admin of some
    kind here (:mod:`bot.commands.authority`)."""

    async def step(call: Call, call_next: Next[Call]) -> Reply:
        spec, request = call.spec, call.request
        if spec.changes_channel and not request.channel_admin:
            raise NotAuthorized(
                f"only members who may manage this channel can {spec.name} it; ask one of them"
            )
        if spec.admin is None:
            return await call_next(call)
        if call.command.count is None or not spec.on_count:
            authority.check_place_admin(request, spec.admin)
        else:
            name = call.command.count
            count = await authority.find_count(services.db, name, request, audited=True)
            await authority.check_admin(services.db, request, count, spec.admin)
            if count.archived and spec.name not in KEEPERS:
                raise CommandError(
                    f"{count.id} is archived; to run it again: archive {count.id} undo"
                )
        return await call_next(call)

    return step


def reply(limits: Throttle) -> Middleware[Call]:
    async def step(call: Call, call_next: Next[Call]) -> Reply:
        answer = await call_next(call)
        if not call.spec.public:
            return replace(answer, ephemeral=True)
        if answer.ephemeral:
            return answer
        ticket = call.request.passed
        if ticket.public if ticket else limits.publish(call.request.channel):
            return answer
        if answer.attachment is not None:  # a file cannot be shown privately everywhere
            seconds = limits.public_per_channel.seconds
            note = f"(The channel was shown one less than {seconds:g} s ago: ask again then.)"
            return replace(answer, text=f"{answer.text} {note}", attachment=None, ephemeral=True)
        return replace(answer, ephemeral=True)

    return step
