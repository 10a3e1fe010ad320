"""Every number tallybot shows is computed here, and only here.

The words used throughout:

* **valid votes**: votes for a choice.
* **counted**: ballots opened and counted, valid or void.
* **challenged**: ballots set aside unresolved; each may yet count for any choice or be thrown
  out.
* **outstanding**: ballots received but not yet opened (received - counted - challenged). When a
  tally is final nothing more will be opened, so nothing is outstanding.
* **pending**: outstanding + challenged: the ballots that could still become valid votes.

A result is *called* only when no way of counting the pending ballots can change it. Each pending
ballot may end up as a vote for any choice or as no vote at all, so a call is checked against the
extreme completions: all pending ballots for one choice (for each choice), or none counted. Under
every rule here a choice's chances only grow with its own votes and only shrink with its rivals',
so if every extreme completion gives the same outcome, so does every completion in between. The
property tests in ``tests/test_arithmetic_exhaustive.py`` check this against brute force.

Worked examples use the Bessemer union election of 2021 at the overnight pause: 3,215 ballots
received, Yes 463, No 1,100; ``no`` holds ties (the union needs a majority). In the examples
(run as doctests by ``tests/test_arithmetic.py``) these names are set::

    BESSEMER = DecisionRule(RuleKind.MAJORITY, tie_holder="no")
    IDS = ("yes", "no")
    PAUSE = {"yes": 463, "no": 1100}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction

from bot.model import Count, DecisionRule, RuleKind, Tally, TallyState

Votes = Mapping[str, int]


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


def valid_votes(votes: Votes) -> int:
    """Total valid votes.

    >>> valid_votes(PAUSE)
    1563
    """
    return sum(votes.values())


def share(part: int, whole: int | None) -> Fraction | None:
    """``part`` as a share of ``whole``; None when the whole is unknown or zero.

    >>> float(share(1100, 1563))  # No's share of the valid votes at the pause
    0.7037747920665387
    >>> share(5, 0) is None
    True
    """
    if whole is None or whole == 0:
        return None
    return Fraction(part, whole)


def shares(votes: Votes) -> dict[str, Fraction | None]:
    """Each choice's share of the valid votes.

    >>> {k: round(float(v), 3) for k, v in shares(PAUSE).items()}
    {'yes': 0.296, 'no': 0.704}
    """
    total = valid_votes(votes)
    return {k: share(v, total) for k, v in votes.items()}


def turnout(received: int | None, eligible: int | None) -> Fraction | None:
    """Ballots received as a share of eligible voters.

    >>> round(float(turnout(3215, 5876)), 4)  # Bessemer: about 5,876 eligible
    0.5471
    """
    return share(received, eligible) if received is not None else None


def counted(tally: Tally) -> int:
    """Ballots opened and counted: valid votes plus void ballots.

    >>> from datetime import datetime, UTC
    >>> t = Tally("b", PAUSE, datetime(2021, 4, 8, tzinfo=UTC), "nlrb", void=0, challenged=505)
    >>> counted(t)
    1563
    """
    return valid_votes(tally.votes) + tally.void


def outstanding(tally: Tally, received: int | None) -> int | None:
    """Ballots received but not yet opened; None when the number received is unknown.

    A final tally has nothing outstanding: the count is closed.

    >>> from datetime import datetime, UTC
    >>> t = Tally("b", PAUSE, datetime(2021, 4, 8, tzinfo=UTC), "nlrb", challenged=505)
    >>> outstanding(t, 3215)   # 3,215 - 1,563 counted - 505 challenged
    1147
    >>> outstanding(t, None) is None
    True
    """
    if tally.state is TallyState.FINAL:
        return 0
    if received is None:
        return None
    return received - counted(tally) - tally.challenged


def pending(tally: Tally, received: int | None) -> int | None:
    """Ballots that could still become valid votes: outstanding plus challenged.

    >>> from datetime import datetime, UTC
    >>> t = Tally("b", PAUSE, datetime(2021, 4, 8, tzinfo=UTC), "nlrb", challenged=505)
    >>> pending(t, 3215)
    1652
    """
    out = outstanding(tally, received)
    return None if out is None else out + tally.challenged


def most_valid_possible(votes: Votes, pending_ballots: int | None) -> int | None:
    """The most valid votes there can be once everything is counted.

    >>> most_valid_possible(PAUSE, 1652)   # 1,563 counted + 1,652 pending
    3215
    """
    if pending_ballots is None:
        return None
    return valid_votes(votes) + pending_ballots


def ranking(choice_ids: Sequence[str], votes: Votes) -> tuple[str, ...]:
    """Choices by valid votes, most first; ties keep the count's own order.

    >>> ranking(IDS, PAUSE)
    ('no', 'yes')
    """
    order = {c: i for i, c in enumerate(choice_ids)}
    return tuple(sorted(choice_ids, key=lambda c: (-votes[c], order[c])))


def leader(choice_ids: Sequence[str], votes: Votes) -> str | None:
    """The choice with the most valid votes, or None when the top is tied (0-0 included).

    >>> leader(IDS, PAUSE)
    'no'
    >>> leader(IDS, {"yes": 7, "no": 7}) is None
    True
    """
    top = ranking(choice_ids, votes)
    if votes[top[0]] == votes[top[1]]:
        return None
    return top[0]


def margin(choice_ids: Sequence[str], votes: Votes) -> int:
    """Votes between the first and the second choice.

    >>> margin(IDS, PAUSE)   # No leads by 637
    637
    """
    top = ranking(choice_ids, votes)
    return votes[top[0]] - votes[top[1]]


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


def quarter(counted_ballots: int, received: int | None) -> int:
    """How many quarters of the ballots received have been counted (0 to 4).

    >>> quarter(1563, 3215)   # 48.6%: past the first quarter
    1
    >>> quarter(1608, 3215)
    2
    """
    if not received:
        return 0
    return min(4, (4 * counted_ballots) // received)


@dataclass(frozen=True, slots=True)
class Standing:
    """All the figures for one tally of one count, computed once."""

    votes: Mapping[str, int]
    valid: int
    counted: int
    received: int | None
    outstanding: int | None
    pending: int | None
    most_valid: int | None
    progress: Fraction | None
    turnout: Fraction | None
    shares: Mapping[str, Fraction | None]
    ranking: tuple[str, ...]
    leader: str | None
    margin: int
    outcome_now: Outcome
    decided: Outcome | None
    needs: Mapping[str, int | None]
    targets: Mapping[str, int | None]
    contenders: tuple[str, ...]
    determinative: bool | None
    switches_to_flip: int | None
    quarter: int


def standing(count: Count, tally: Tally) -> Standing:
    """Compute every figure for ``tally``.

    >>> from datetime import datetime, UTC
    >>> from bot.model import Choice
    >>> c = Count("bessemer-2021", "Bessemer", (Choice("yes", "Yes"), Choice("no", "No")),
    ...           BESSEMER, received=3215)
    >>> s = standing(c, Tally(c.id, PAUSE, datetime(2021, 4, 8, tzinfo=UTC), "nlrb"))
    >>> s.leader, s.margin, s.counted, s.received, round(float(s.progress) * 100, 1)
    ('no', 637, 1563, 3215, 48.6)
    >>> dict(s.needs), dict(s.targets)   # a side needs 1,608 to clinch
    ({'yes': 1145, 'no': 508}, {'yes': 1608, 'no': 1608})
    """
    ids = count.choice_ids
    votes = tally.votes
    rule = count.rule
    received = tally.received if tally.received is not None else count.received
    out = outstanding(tally, received)
    pend = None if out is None else out + tally.challenged
    done = counted(tally)
    decided = certain_outcome(rule, ids, votes, pend)
    needs = {c: votes_to_clinch(rule, ids, votes, pend, c) for c in ids}
    if decided is not None:
        determinative: bool | None = False
    elif out == 0:
        determinative = tally.challenged > 0
    else:
        determinative = None
    return Standing(
        votes=dict(votes),
        valid=valid_votes(votes),
        counted=done,
        received=received,
        outstanding=out,
        pending=pend,
        most_valid=most_valid_possible(votes, pend),
        progress=share(done, received),
        turnout=turnout(received, count.eligible),
        shares=shares(votes),
        ranking=ranking(ids, votes),
        leader=leader(ids, votes),
        margin=margin(ids, votes),
        outcome_now=outcome(rule, ids, votes),
        decided=decided,
        needs=needs,
        targets={c: None if n is None else votes[c] + n for c, n in needs.items()},
        contenders=contenders(rule, ids, votes, pend),
        determinative=determinative,
        switches_to_flip=switches_to_flip(rule, ids, votes),
        quarter=quarter(done, received),
    )
