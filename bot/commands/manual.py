"""Manual figures: an admin's ``update``, ``correct``, ``pause``, ``resume`` or ``final`` becomes a
tally that goes through the same pipeline as a polled one."""

from __future__ import annotations

from datetime import datetime

from bot.base.clock import Clock
from bot.commands.args import FIGURE_KEYS, Command
from bot.commands.request import Reply, Request
from bot.commands.verbs import Verb
from bot.domain.arithmetic import accounted
from bot.domain.detect import Accepted, NoChange, Rejected, RejectReason
from bot.domain.model import Count, CountStatus, Tally, TallyState
from bot.domain.words import n
from bot.errors import CommandError
from bot.ingest.pipeline import Pipeline
from bot.store import Database
from bot.store import tallies as tally_rows

# What to type instead when the detector rejects an admin's figures: hints that work if followed.
#
# A hint is only given when the command it suggests would be accepted for the reason at hand: a
# figure over the ballots received is fixed by raising ``received`` (a ``correct`` would be
# rejected the same way; but a final count changes only by a ``correct``), figures that went down
# by the same figures sent with ``correct``, a final that leaves ballots unaccounted for by the
# figures that account for them, or by the number really received, and challenged ballots that
# vanished by saying they were sustained.


def rejection_hint(
    count: Count,
    command: Command,
    tally: Tally,
    rejected: Rejected,
    previous: Tally | None = None,
) -> str:
    """`` (...)`` to append to the rejection of ``command``; empty when no command would do."""
    given = [f"{k}={v}" for k, v in command.figures]
    opened = accounted(tally)
    reason = rejected.reason
    if reason is RejectReason.CHALLENGES_UNEXPLAINED and previous is not None:
        resolved = previous.challenged - tally.challenged
        placed = accounted(tally) - accounted(previous) + resolved
        upheld = tally.sustained + resolved - max(placed, 0)
        figures = [f for f in given if not f.startswith("sustained=")]
        line = _line(command.verb, count, [*figures, f"sustained={upheld}"])
        return f" (if those challenges were upheld, say so: {line})"
    if reason is RejectReason.OVER_RECEIVED:
        if count.eligible is not None and opened > count.eligible:
            return ""  # more than eligible: the config is wrong, no command fixes it
        figures = [f for f in given if not f.startswith("received=")]
        verb = Verb.CORRECT if count.status is CountStatus.FINAL else command.verb  # else refused
        line = _line(verb, count, [*figures, f"received={opened}"])
        return f" (if more ballots came in, say so: {line})"
    if reason in (RejectReason.DECREASE, RejectReason.FINAL_CHANGED) and given:
        return f" (to fix earlier figures: {_line(Verb.CORRECT, count, given)})"
    if reason is RejectReason.FINAL_UNACCOUNTED:
        received = tally.received if tally.received is not None else count.received
        every = [f"{c}=N" for c in count.choice_ids] + ["void=N", "challenged=N"]
        hint = (
            f"send figures that add up to {n(received or 0)}: {_line(command.verb, count, every)}"
        )
        if opened:
            hint += f"; or received={opened} if only {n(opened)} came in"
        return f" ({hint})"
    return ""


def _line(verb: str, count: Count, figures: list[str]) -> str:
    return " ".join([verb, count.id, *figures])


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
