"""Change detection: is a new tally nothing new, an update (and what happened), or wrong?

``detect(count, previous, new)`` is pure. It never changes a figure: it either accepts the new
tally as it is, ignores it because nothing changed, or rejects it with a reason that is stored
and shown to admins.

A count's settings change too (``edit``: its rule, tie holder, threshold, ballots received or
labels). ``detect(count, previous, new, was=before)`` weighs the previous tally under the
settings it was published with (``was``) and the new one under the new settings, so a call, a
runoff, a determinative state or a final result that the edit changes is seen, like one a
tally changes, and accepted as a correction (``Accepted.revised``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum

from bot.domain.arithmetic import Outcome, RunoffPlaces, Standing, accounted, standing
from bot.domain.model import CEILING_RULE, MAX_FIGURE, OPERATOR, Count, Tally, TallyState
from bot.domain.words import count_of, n


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
    CHALLENGES_UNEXPLAINED = "challenges_unexplained"


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
    revised: Count | None = None
    """The count's settings the previous tally was published with, when an edit of them
    changed what the figures mean (then ``previous`` is the standing under them)."""

    @property
    def significant(self) -> bool:
        return any(e.significant for e in self.events)

    def has(self, kind: EventKind) -> bool:
        return any(e.kind is kind for e in self.events)


Detection = NoChange | Rejected | Accepted


def detect(
    count: Count, previous: Tally | None, new: Tally, *, was: Count | None = None
) -> Detection:
    """Compare ``new`` with the last accepted tally of ``count``; ``was``: the count's settings
    ``previous`` was published with, when they were edited since (see the module docstring)."""
    problem = validate(count, previous, new)
    if problem is not None:
        return problem
    before = standing(was or count, previous) if previous is not None else None
    after = standing(count, new)
    revised = (
        was is not None
        and before is not None
        and published(was, previous, before) != published(count, new, after)
    )
    if previous is not None and previous.figures() == new.figures() and not revised:
        return NoChange()
    if revised:
        new = replace(new, correction=True)
    found = events(previous, before, new, after)
    return Accepted(new, found, after, before, was if revised else None)


Published = tuple[object, ...]


def published(count: Count, tally: Tally | None, s: Standing) -> Published:
    """What a message says of the result, beyond the figures: the call (a clinch, a runoff and
    who is in it), whether the challenged ballots decide it, the final result, and the labels
    of the choices it names. An edit that changes any of it is news.

    >>> from datetime import datetime, UTC
    >>> from bot.domain.model import Choice, DecisionRule, RuleKind
    >>> c = Count("x", "X", (Choice("yes", "Yes"), Choice("no", "No")),
    ...           DecisionRule(RuleKind.MAJORITY), received=100)
    >>> t = Tally("x", {"yes": 60, "no": 20}, datetime(2021, 4, 8, tzinfo=UTC), "admin")
    >>> published(c, t, standing(c, t))[0]   # Yes has clinched a majority
    Outcome(kind=<OutcomeKind.WIN: 'win'>, winner='yes')
    >>> from dataclasses import replace
    >>> later = replace(c, received=200)      # 100 more ballots: nothing is certain now
    >>> published(later, t, standing(later, t))[0] is None
    True
    """
    final = tally is not None and tally.state is TallyState.FINAL
    result = s.outcome_now if final else None
    named: set[str] = set()
    for o in (s.decided, result):
        if o is not None and o.winner is not None:
            named.add(o.winner)
    runoff: RunoffPlaces | None = s.runoff
    if runoff is not None:
        named.update(runoff.certain)
    labels = tuple(sorted((c, count.label(c)) for c in named))
    return (s.decided, s.determinative, runoff, result, labels)


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
    figures = {
        **new.votes,
        "void": new.void,
        "challenged": new.challenged,
        "sustained": new.sustained,
    }
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
    opened = accounted(new)
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
            "received is (a challenge upheld is sustained=N)",
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
    for name, was, now in (
        ("void", previous.void, new.void),
        ("sustained", previous.sustained, new.sustained),
        ("received", previous.received, new.received),
    ):
        if was is not None and now is not None and now < was:
            lower.append(f"{name} {was:,} -> {now:,}")
    if lower:
        return Rejected(
            RejectReason.DECREASE,
            f"figures went down ({'; '.join(lower)}); send them as a correction if they are right",
        )
    resolved = previous.challenged - new.challenged
    placed = accounted(new) - accounted(previous) + resolved  # counted or sustained since
    if resolved > 0 and placed < resolved:
        return Rejected(
            RejectReason.CHALLENGES_UNEXPLAINED,
            f"{count_of(resolved, 'challenged ballot')} resolved (challenged "
            f"{previous.challenged:,} -> {new.challenged:,}) but only {n(max(placed, 0))} "
            "more counted or sustained: a ballot whose challenge is overruled is counted with "
            "the votes, one whose challenge is upheld is sustained=N",
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
