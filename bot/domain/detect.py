"""Change detection: is a new tally nothing new, an update (and what happened), or wrong?

``detect(count, previous, new)`` is pure. It never changes a figure: it either accepts the new
tally as it is, ignores it because nothing changed, or rejects it with a reason that is stored
and shown to admins.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.domain.arithmetic import Outcome, Standing, standing
from bot.domain.model import CEILING_RULE, MAX_FIGURE, OPERATOR, Count, Tally, TallyState
from bot.domain.words import n


class RejectReason(StrEnum):
    WRONG_COUNT = "wrong_count"
    NEGATIVE = "negative"
    UNKNOWN_CHOICE = "unknown_choice"
    MISSING_CHOICE = "missing_choice"
    TOO_LARGE = "too_large"
    OVER_RECEIVED = "over_received"
    OVER_ELIGIBLE = "over_eligible"
    FINAL_UNACCOUNTED = "final_unaccounted"
    DECREASE = "decrease"
    FINAL_CHANGED = "final_changed"


class EventKind(StrEnum):
    """What an accepted update means, most important first (see ``PRIORITY``)."""

    FINAL = "final"
    CALL_WITHDRAWN = "call_withdrawn"
    CLINCHED = "clinched"
    DETERMINATIVE = "determinative"
    NOT_DETERMINATIVE = "not_determinative"
    CORRECTION = "correction"
    LEAD_CHANGE = "lead_change"
    TIE = "tie"
    FIRST_RESULTS = "first_results"
    PAUSED = "paused"
    RESUMED = "resumed"
    MILESTONE = "milestone"
    UPDATE = "update"


PRIORITY: tuple[EventKind, ...] = tuple(EventKind)
ROUTINE: frozenset[EventKind] = frozenset({EventKind.UPDATE})


@dataclass(frozen=True, slots=True)
class Event:
    kind: EventKind
    choice: str | None = None
    """The choice concerned: the new leader, the winner."""
    quarter: int | None = None
    """For milestones: 1 to 4 quarters of the ballots counted."""
    outcome: Outcome | None = None
    """For clinched and withdrawn calls: the outcome called (or withdrawn)."""

    @property
    def significant(self) -> bool:
        return self.kind not in ROUTINE


@dataclass(frozen=True, slots=True)
class NoChange:
    """The new tally says nothing the last accepted one did not."""


@dataclass(frozen=True, slots=True)
class Rejected:
    reason: RejectReason
    detail: str


@dataclass(frozen=True, slots=True)
class Accepted:
    tally: Tally
    events: tuple[Event, ...]
    standing: Standing
    previous: Standing | None

    @property
    def significant(self) -> bool:
        return any(e.significant for e in self.events)

    def has(self, kind: EventKind) -> bool:
        return any(e.kind is kind for e in self.events)


Detection = NoChange | Rejected | Accepted


def detect(count: Count, previous: Tally | None, new: Tally) -> Detection:
    """Compare ``new`` with the last accepted tally of ``count``."""
    problem = validate(count, previous, new)
    if problem is not None:
        return problem
    if previous is not None and previous.figures() == new.figures():
        return NoChange()
    before = standing(count, previous) if previous is not None else None
    after = standing(count, new)
    return Accepted(new, events(previous, before, new, after), after, before)


def validate(count: Count, previous: Tally | None, new: Tally) -> Rejected | None:
    """Why ``new`` cannot be accepted after ``previous``, or None when it can."""
    if new.count_id != count.id:
        return Rejected(
            RejectReason.WRONG_COUNT, f"tally is for {new.count_id!r}, not {count.id!r}"
        )
    unknown = sorted(set(new.votes) - set(count.choice_ids))
    if unknown:
        return Rejected(
            RejectReason.UNKNOWN_CHOICE,
            f"unknown choice {', '.join(unknown)}; choices are {', '.join(count.choice_ids)}",
        )
    missing = [c for c in count.choice_ids if c not in new.votes]
    if missing:
        return Rejected(RejectReason.MISSING_CHOICE, f"no figure for {', '.join(missing)}")
    figures = {**new.votes, "void": new.void, "challenged": new.challenged}
    if new.received is not None:
        figures["received"] = new.received
    negative = [f"{k}={v}" for k, v in figures.items() if v < 0]
    if negative:
        return Rejected(RejectReason.NEGATIVE, f"negative figure: {', '.join(negative)}")
    large = [f"{k}={n(v)}" for k, v in figures.items() if v > MAX_FIGURE]
    if large:
        return Rejected(
            RejectReason.TOO_LARGE, f"{', '.join(large)} is above the ceiling: {CEILING_RULE}"
        )
    received = new.received if new.received is not None else count.received
    opened = sum(new.votes.values()) + new.void + new.challenged
    if received is not None and opened > received:
        return Rejected(
            RejectReason.OVER_RECEIVED,
            f"{n(opened)} ballots counted or challenged but only {n(received)} received",
        )
    if received is not None and count.eligible is not None and received > count.eligible:
        return Rejected(
            RejectReason.OVER_ELIGIBLE,
            f"{n(received)} received but only {n(count.eligible)} eligible "
            f"({_eligible_set(count)})",
        )
    if new.state is TallyState.FINAL and received is not None and opened < received:
        left = received - opened
        return Rejected(
            RejectReason.FINAL_UNACCOUNTED,
            f"{n(left)} of the {n(received)} ballots received {'is' if left == 1 else 'are'} "
            "not yet counted, void or challenged; a count is final only when every ballot "
            "received is",
        )
    if previous is None or new.correction:
        return None
    if previous.state is TallyState.FINAL and previous.figures() != new.figures():
        return Rejected(
            RejectReason.FINAL_CHANGED,
            "the count is final; send the new figures as a correction to change it",
        )
    lower = [
        f"{k} {previous.votes[k]:,} -> {v:,}"
        for k, v in new.votes.items()
        if k in previous.votes and v < previous.votes[k]
    ]
    if new.void < previous.void:
        lower.append(f"void {previous.void:,} -> {new.void:,}")
    if lower:
        return Rejected(
            RejectReason.DECREASE,
            f"figures went down ({'; '.join(lower)}); send them as a correction if they are right",
        )
    return None


def _eligible_set(count: Count) -> str:
    """Where a count's ``eligible`` is set, and so where to put it right."""
    if count.owner == OPERATOR:
        return "eligible is set in the config"
    return f"if more are eligible: edit {count.id} eligible=N"


def events(
    previous: Tally | None, before: Standing | None, new: Tally, after: Standing
) -> tuple[Event, ...]:
    """Everything that happened between two accepted tallies, most important first."""
    found: list[Event] = [Event(EventKind.UPDATE)]
    if new.correction:
        found.append(Event(EventKind.CORRECTION))
    first = after.valid > 0 and (before is None or before.valid == 0)
    if first:
        found.append(Event(EventKind.FIRST_RESULTS, choice=after.leader))
    ahead = _ahead(after)
    moved = before is not None and before.valid > 0 and after.valid > 0 and _ahead(before) != ahead
    if moved and len(ahead) == 1:
        found.append(Event(EventKind.LEAD_CHANGE, choice=after.leader))
    if len(ahead) > 1 and (moved or first):
        found.append(Event(EventKind.TIE))
    if after.quarter > (before.quarter if before is not None else 0):
        found.append(Event(EventKind.MILESTONE, quarter=after.quarter))
    was_called = before.decided if before is not None else None
    if was_called is not None and after.decided != was_called:
        found.append(Event(EventKind.CALL_WITHDRAWN, choice=was_called.winner, outcome=was_called))
    if after.decided is not None and after.decided != was_called:
        found.append(Event(EventKind.CLINCHED, choice=after.decided.winner, outcome=after.decided))
    det_now = _determinative_known(new, after)
    det_before = _determinative_known(previous, before) if previous is not None else None
    if det_now is not None and det_now != det_before:
        kind = EventKind.DETERMINATIVE if det_now else EventKind.NOT_DETERMINATIVE
        found.append(Event(kind))
    old_state = previous.state if previous is not None else None
    if new.state is TallyState.PAUSED and old_state is not TallyState.PAUSED:
        found.append(Event(EventKind.PAUSED))
    if new.state is TallyState.COUNTING and old_state is TallyState.PAUSED:
        found.append(Event(EventKind.RESUMED))
    if new.state is TallyState.FINAL and old_state is not TallyState.FINAL:
        found.append(Event(EventKind.FINAL))
    return tuple(sorted(found, key=lambda e: PRIORITY.index(e.kind)))


def _ahead(s: Standing) -> frozenset[str]:
    """The choices with the most valid votes (several when tied); none before any valid vote."""
    if s.valid == 0:
        return frozenset()
    top = s.votes[s.ranking[0]]
    return frozenset(c for c in s.ranking if s.votes[c] == top)


def _determinative_known(tally: Tally | None, s: Standing | None) -> bool | None:
    """Whether the challenged ballots decide it, once every other ballot has been opened."""
    if tally is None or s is None or tally.challenged == 0 or s.outstanding != 0:
        return None
    return s.determinative
