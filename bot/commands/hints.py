"""What to type instead when the detector rejects an admin's figures: hints that work if followed.

A hint is only given when the command it suggests would be accepted for the reason at hand: a
figure over the ballots received is fixed by raising ``received`` (a ``correct`` would be
rejected the same way; but a final count changes only by a ``correct``), figures that went down
by the same figures sent with ``correct``, a final that leaves ballots unaccounted for by the
figures that account for them, or by the number really received, and challenged ballots that
vanished by saying they were sustained.
"""

from __future__ import annotations

from bot.commands.args import Command
from bot.commands.verbs import Verb
from bot.domain.arithmetic import accounted
from bot.domain.detect import Rejected, RejectReason
from bot.domain.model import Count, CountStatus, Tally
from bot.domain.words import n


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
