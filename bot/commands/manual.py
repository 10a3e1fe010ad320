"""Manual figures: an admin's ``update``, ``correct``, ``pause``, ``resume`` or ``final`` becomes a
tally that goes through the same pipeline as a polled one."""

from __future__ import annotations

from datetime import datetime

from bot.base.clock import Clock
from bot.commands.args import FIGURE_KEYS, Command
from bot.commands.hints import rejection_hint
from bot.commands.request import Reply, Request
from bot.commands.verbs import Verb
from bot.domain.detect import Accepted, NoChange, Rejected
from bot.domain.model import Count, Tally, TallyState
from bot.errors import CommandError
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import tallies as tally_rows


async def manual(
    db: Database, pipeline: Pipeline, clock: Clock, request: Request, command: Command, count: Count
) -> Reply:
    """Manual figures (``update``, ``correct``, ``pause``, ``resume``, ``final``): through the
    pipeline like a polled tally."""
    async with db.connect() as conn:
        last = await tally_rows.last(conn, count.id)
    tally = manual_tally(count, last, command, request, clock.now())
    result = await pipeline.ingest(tally, actor=request.actor, action=command.verb)
    d = result.detection
    if isinstance(d, NoChange):
        return Reply(f"No change: {count.id} {_already(command, last)}.")
    if isinstance(d, Rejected):
        hint = rejection_hint(count, command, tally, d, result.previous)
        return Reply(f"Rejected: {d.detail}{hint}", ok=False)
    assert isinstance(d, Accepted)
    assert result.message is not None
    resumes = ""
    if command.verb == Verb.UPDATE and last is not None and last.state is TallyState.PAUSED:
        resumes = f" (new figures resume the count, paused at update #{last.seq})"
    return Reply(
        f"Accepted update #{result.tally.seq} for {count.id}{resumes}: {result.message.headline}",
        message=result.message,
    )


def _already(command: Command, last: Tally | None) -> str:
    """What a command that changes nothing finds: the state it asks for, or the figures."""
    state = last.state if last is not None else None
    if command.verb == Verb.RESUME and state is TallyState.COUNTING:
        return "is not paused: it is counting"
    if command.verb == Verb.PAUSE and state is TallyState.PAUSED:
        return "is paused already"
    return "already shows those figures"


def manual_tally(
    count: Count, last: Tally | None, command: Command, request: Request, now: datetime
) -> Tally:
    """The tally an admin's command describes: the last figures with the given ones changed."""
    votes = dict(last.votes) if last else dict.fromkeys(count.choice_ids, 0)
    void = last.void if last else 0
    challenged = last.challenged if last else 0
    sustained = last.sustained if last else 0
    received = last.received if last else None
    for key, value in command.figures:
        if key in count.choice_ids:
            votes[key] = value
        elif key == "void":
            void = value
        elif key == "challenged":
            challenged = value
        elif key == "sustained":
            sustained = value
        elif key == "received":
            received = value
        else:
            names = ", ".join([*count.choice_ids, *FIGURE_KEYS])
            raise CommandError(f"unknown choice {key!r} for {count.id}; use one of: {names}")
    state = last.state if last else TallyState.COUNTING
    if command.verb == Verb.PAUSE:
        state = TallyState.PAUSED
    elif command.verb == Verb.RESUME:
        state = TallyState.COUNTING
    elif command.verb == Verb.FINAL:
        state = TallyState.FINAL
    elif command.verb == Verb.UPDATE and state is TallyState.PAUSED:
        state = TallyState.COUNTING  # new figures: the count is going again
    return Tally(
        count_id=count.id,
        votes=votes,
        observed_at=now,
        source=f"admin {request.user_name}",
        void=void,
        challenged=challenged,
        sustained=sustained,
        received=received,
        state=state,
        correction=command.verb == Verb.CORRECT,
    )
