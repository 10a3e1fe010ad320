"""Outcomes, and what is certain whatever the pending ballots do: calls, clinches, runoffs.

A result is *called* only when no way of counting the pending ballots can change it; see
:mod:`bot.domain.arithmetic` for why checking the extreme completions is enough. The worked examples
use the names set there (``BESSEMER``, ``IDS``, ``PAUSE``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.domain.arithmetic.figures import Votes, ranking, valid_votes
from bot.domain.model import DecisionRule, RuleKind


class OutcomeKind(StrEnum):
    WIN = "win"
    """One choice wins (possibly by holding a tie)."""
    TIE = "tie"
    """A tie at the top and no choice holds ties."""
    RUNOFF = "runoff"
    """Majority rule, three or more choices, nobody has a majority: the top two go to a runoff."""
    NO_DECISION = "no_decision"
    """Threshold rule with no tie holder, and no choice reached the threshold."""


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: OutcomeKind
    winner: str | None = None


def outcome(rule: DecisionRule, choice_ids: Sequence[str], votes: Votes) -> Outcome:
    """The result if counting stopped with these votes.

    >>> outcome(BESSEMER, IDS, PAUSE)
    Outcome(kind=<OutcomeKind.WIN: 'win'>, winner='no')
    >>> outcome(BESSEMER, IDS, {"yes": 10, "no": 10}).winner   # a tie: No holds ties
    'no'
    >>> three = ("a", "b", "c")
    >>> outcome(DecisionRule(RuleKind.MAJORITY), three, {"a": 4, "b": 3, "c": 3}).kind
    <OutcomeKind.RUNOFF: 'runoff'>
    >>> outcome(DecisionRule(RuleKind.THRESHOLD, threshold=Fraction(2, 3)), IDS,
    ...         {"yes": 66, "no": 34}).kind   # 66% is short of two thirds
    <OutcomeKind.NO_DECISION: 'no_decision'>
    """
    total = valid_votes(votes)
    holder = rule.tie_holder
    if rule.kind is RuleKind.MAJORITY:
        for c in choice_ids:
            if 2 * votes[c] > total:
                return Outcome(OutcomeKind.WIN, c)
        if len(choice_ids) > 2:
            return Outcome(OutcomeKind.RUNOFF)
        return Outcome(OutcomeKind.WIN, holder) if holder else Outcome(OutcomeKind.TIE)
    if rule.kind is RuleKind.THRESHOLD:
        assert rule.threshold is not None
        num, den = rule.threshold.numerator, rule.threshold.denominator
        if total > 0:
            for c in choice_ids:
                if den * votes[c] >= num * total:
                    return Outcome(OutcomeKind.WIN, c)
        return Outcome(OutcomeKind.WIN, holder) if holder else Outcome(OutcomeKind.NO_DECISION)
    top = max(votes[c] for c in choice_ids)
    leaders = [c for c in choice_ids if votes[c] == top]
    if len(leaders) == 1:
        return Outcome(OutcomeKind.WIN, leaders[0])
    if holder in leaders:
        return Outcome(OutcomeKind.WIN, holder)
    return Outcome(OutcomeKind.TIE)


def _plus(votes: Votes, choice: str, extra: int) -> dict[str, int]:
    out = dict(votes)
    out[choice] += extra
    return out


def certain_outcome(
    rule: DecisionRule, choice_ids: Sequence[str], votes: Votes, pending_ballots: int | None
) -> Outcome | None:
    """The outcome if no way of counting the pending ballots can change it, else None.

    >>> certain_outcome(BESSEMER, IDS, PAUSE, 1652) is None   # overnight: not decided
    True
    >>> certain_outcome(BESSEMER, IDS, {"yes": 600, "no": 1608}, 1007).winner
    'no'
    >>> certain_outcome(BESSEMER, IDS, {"yes": 738, "no": 1798}, 505).winner  # the final
    'no'
    """
    if pending_ballots is None:
        return None
    now = outcome(rule, choice_ids, votes)
    if pending_ballots == 0:
        return now
    for c in choice_ids:
        if outcome(rule, choice_ids, _plus(votes, c, pending_ballots)) != now:
            return None
    return now


def can_win(
    rule: DecisionRule,
    choice_ids: Sequence[str],
    votes: Votes,
    pending_ballots: int | None,
    choice: str,
) -> bool:
    """Whether some way of counting the pending ballots makes ``choice`` the winner.

    >>> can_win(BESSEMER, IDS, PAUSE, 1652, "yes")
    True
    >>> can_win(BESSEMER, IDS, {"yes": 738, "no": 1798}, 505, "yes")
    False
    """
    if pending_ballots is None:
        return True
    best = outcome(rule, choice_ids, _plus(votes, choice, pending_ballots))
    return best == Outcome(OutcomeKind.WIN, choice)


def contenders(
    rule: DecisionRule, choice_ids: Sequence[str], votes: Votes, pending_ballots: int | None
) -> tuple[str, ...]:
    """The choices that can still win.

    >>> contenders(DecisionRule(RuleKind.MAJORITY), ("a", "b", "c"),
    ...            {"a": 50, "b": 45, "c": 5}, 12)   # c could reach 17 of 112 at most
    ('a', 'b')
    """
    return tuple(c for c in choice_ids if can_win(rule, choice_ids, votes, pending_ballots, c))


def runoff_certain(
    rule: DecisionRule, choice_ids: Sequence[str], votes: Votes, pending_ballots: int | None
) -> bool:
    """Majority rule with three or more choices: no choice can reach a majority any more.

    >>> runoff_certain(DecisionRule(RuleKind.MAJORITY), ("a", "b", "c"),
    ...                {"a": 40, "b": 35, "c": 20}, 5)
    True
    """
    decided = certain_outcome(rule, choice_ids, votes, pending_ballots)
    return decided is not None and decided.kind is OutcomeKind.RUNOFF


def votes_to_clinch(
    rule: DecisionRule,
    choice_ids: Sequence[str],
    votes: Votes,
    pending_ballots: int | None,
    choice: str,
) -> int | None:
    """How many more of the pending ballots ``choice`` needs to win whatever the rest do.

    0 when it has already clinched; None when it can no longer clinch or nothing is known
    about the ballots still to come.

    >>> votes_to_clinch(BESSEMER, IDS, PAUSE, 1652, "no")    # to 1,608
    508
    >>> votes_to_clinch(BESSEMER, IDS, PAUSE, 1652, "yes")   # to 1,608
    1145
    """
    if pending_ballots is None:
        return None
    won = Outcome(OutcomeKind.WIN, choice)

    def clinched_with(k: int) -> bool:
        return (
            certain_outcome(rule, choice_ids, _plus(votes, choice, k), pending_ballots - k) == won
        )

    if not clinched_with(pending_ballots):
        return None
    lo, hi = 0, pending_ballots
    while lo < hi:
        mid = (lo + hi) // 2
        if clinched_with(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def switches_to_flip(rule: DecisionRule, choice_ids: Sequence[str], votes: Votes) -> int | None:
    """The fewest ballots that, moved from the current winner to one rival, change the result.

    None when nobody is winning on the votes counted so far.

    >>> switches_to_flip(BESSEMER, IDS, {"yes": 738, "no": 1798})  # 530 leaves a tie, No holds it
    531
    >>> switches_to_flip(BESSEMER, IDS, {"yes": 1798, "no": 738})  # a tie is enough to beat Yes
    530
    """
    now = outcome(rule, choice_ids, votes)
    if now.kind is not OutcomeKind.WIN or now.winner is None:
        return None
    winner = now.winner
    best: int | None = None
    for rival in choice_ids:
        if rival == winner:
            continue

        def flipped(k: int, rival: str = rival) -> bool:
            moved = _plus(_plus(votes, winner, -k), rival, k)
            return outcome(rule, choice_ids, moved) != now

        if not flipped(votes[winner]):
            continue
        lo, hi = 1, votes[winner]
        while lo < hi:
            mid = (lo + hi) // 2
            if flipped(mid):
                hi = mid
            else:
                lo = mid + 1
        best = lo if best is None else min(best, lo)
    return best


def challenges_determinative(
    rule: DecisionRule, choice_ids: Sequence[str], votes: Votes, challenged: int
) -> bool:
    """Whether the challenged ballots are enough, in number, to change the result.

    >>> challenges_determinative(BESSEMER, IDS, {"yes": 738, "no": 1798}, 505)
    False
    >>> challenges_determinative(BESSEMER, IDS, {"yes": 1200, "no": 1336}, 505)
    True
    """
    return challenged > 0 and certain_outcome(rule, choice_ids, votes, challenged) is None


@dataclass(frozen=True, slots=True)
class RunoffPlaces:
    """Who goes to a runoff between the top two, as far as the count decides it."""

    certain: tuple[str, ...]
    """In the runoff however the pending ballots are counted: strictly in the top two."""
    open: tuple[str, ...]
    """Could take a place that is not certain: tied for it, or the pending ballots decide."""


def runoff_places(choice_ids: Sequence[str], votes: Votes, pending_ballots: int) -> RunoffPlaces:
    """The two runoff places, and which of them the count alone does not fill.

    A choice is certain of a place when no two rivals can both draw level with it, even with
    every pending ballot going to them; it could take a place when, with every pending ballot
    its own, at most one rival stays ahead of it. A tie for a place is never decided here.

    >>> abc = ("a", "b", "c")
    >>> runoff_places(abc, {"a": 40, "b": 35, "c": 25}, 0)
    RunoffPlaces(certain=('a', 'b'), open=())
    >>> runoff_places(abc, {"a": 40, "b": 30, "c": 30}, 0)   # tied for second
    RunoffPlaces(certain=('a',), open=('b', 'c'))
    >>> runoff_places(abc, {"a": 40, "b": 30, "c": 28}, 2)   # c could draw level with b
    RunoffPlaces(certain=('a',), open=('b', 'c'))
    >>> runoff_places(abc, {"a": 30, "b": 30, "c": 30}, 0)   # tied for first
    RunoffPlaces(certain=(), open=('a', 'b', 'c'))
    """

    def certain(choice: str) -> bool:
        costs = sorted(max(0, votes[choice] - votes[r]) for r in choice_ids if r != choice)
        return len(costs) < 2 or costs[0] + costs[1] > pending_ballots

    def possible(choice: str) -> bool:
        best = votes[choice] + pending_ballots
        return sum(1 for r in choice_ids if r != choice and votes[r] > best) <= 1

    order = ranking(choice_ids, votes)
    sure = tuple(c for c in order if certain(c))
    return RunoffPlaces(sure, tuple(c for c in order if c not in sure and possible(c)))
