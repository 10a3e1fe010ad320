"""The race from here: what organisers and reporters ask of a count that is still open.

Who could still reach a runoff, what share of the ballots left a side needs, what the last batch
of votes did, the margin in points, what it takes to draw level, and the pace of counting. Each
is arithmetic on figures the count already has; those that claim what can still happen are
checked against brute force in ``tests/test_arithmetic_race.py``. The worked examples use the
names set in :mod:`bot.domain.arithmetic` (``BESSEMER``, ``IDS``, ``PAUSE``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fractions import Fraction

from bot.domain.arithmetic.figures import Votes, ranking, share, valid_votes
from bot.domain.model import DecisionRule, RuleKind


def _runoff_place_cost(choice_ids: Sequence[str], votes: Votes, choice: str, ahead: str) -> int:
    """The fewest pending ballots that leave no majority, ``choice`` in the top two and at most
    ``ahead`` above it.

    No majority means the largest figure is at most the sum of the others. The other rivals
    must end at most level with ``choice`` (and may be raised up to it, which only helps); the
    cost only grows with ``choice``'s own final figure, so the least feasible one is taken.
    """
    others = [r for r in choice_ids if r not in (choice, ahead)]
    top = votes[ahead]
    rest = sum(votes[r] for r in others)
    least = max(
        votes[choice],
        max(votes[r] for r in others),
        -(-top // (len(others) + 1)),  # enough room under ``choice`` to balance ``ahead``
    )
    return least - votes[choice] + max(0, abs(top - least) - rest)


def runoff_reachable(
    rule: DecisionRule,
    choice_ids: Sequence[str],
    votes: Votes,
    pending_ballots: int | None,
    choice: str,
) -> bool:
    """Whether some way of counting the pending ballots leaves no majority with ``choice`` in
    the top two (at most one rival ahead of it): it could still be in a runoff.

    Only a majority count of three or more choices has runoffs. Unknown pending ballots: it
    could.

    >>> abc = ("a", "b", "c")
    >>> MAJ = DecisionRule(RuleKind.MAJORITY)
    >>> [runoff_reachable(MAJ, abc, {"a": 50, "b": 26, "c": 24}, 6, c) for c in abc]
    [True, True, True]
    >>> runoff_reachable(MAJ, abc, {"a": 60, "b": 26, "c": 14}, 6, "c")   # a keeps a majority
    False
    """
    if rule.kind is not RuleKind.MAJORITY or len(choice_ids) < 3:
        return False
    if pending_ballots is None:
        return True
    return any(
        _runoff_place_cost(choice_ids, votes, choice, ahead) <= pending_ballots
        for ahead in choice_ids
        if ahead != choice
    )


def runoff_hopefuls(
    rule: DecisionRule, choice_ids: Sequence[str], votes: Votes, pending_ballots: int | None
) -> tuple[str, ...]:
    """The choices that could still be in a runoff, most votes first; empty when no runoff is
    possible (a runoff's top two always could, so there are never fewer than two).

    >>> runoff_hopefuls(DecisionRule(RuleKind.MAJORITY), ("a", "b", "c"),
    ...                 {"a": 50, "b": 26, "c": 24}, 6)   # a with 3 or fewer of the 6: a runoff
    ('a', 'b', 'c')
    >>> runoff_hopefuls(BESSEMER, IDS, PAUSE, 1652)
    ()
    """
    return tuple(
        c
        for c in ranking(choice_ids, votes)
        if runoff_reachable(rule, choice_ids, votes, pending_ballots, c)
    )


def needed_share(needed: int, of: int) -> Fraction | None:
    """``needed`` of ``of`` ballots as a share; None when there are none.

    >>> round(float(needed_share(1145, 1652)), 3)   # Yes at the pause: of the 1,652 pending
    0.693
    >>> round(float(needed_share(1145, 1147)), 3)   # of the 1,147 unopened alone: 99.8%
    0.998
    """
    return share(needed, of)


@dataclass(frozen=True, slots=True)
class Batch:
    """The votes since the previous update."""

    votes: Mapping[str, int]
    """Each choice's new votes."""
    total: int
    shares: Mapping[str, Fraction]
    """Each choice's share of the new votes."""
    order: tuple[str, ...]
    """The choices by new votes, most first."""


def batch(choice_ids: Sequence[str], before: Votes, after: Votes) -> Batch | None:
    """What the votes since ``before`` were; None when there were none or a figure went down
    (a correction is not a batch).

    >>> b = batch(IDS, PAUSE, {"yes": 509, "no": 1175})   # 121 more votes
    >>> b.total, b.order, round(float(b.shares["no"]), 3)
    (121, ('no', 'yes'), 0.62)
    >>> batch(IDS, PAUSE, {"yes": 462, "no": 1200}) is None
    True
    """
    new = {c: after[c] - before.get(c, 0) for c in choice_ids}
    total = valid_votes(new)
    if total == 0 or any(v < 0 for v in new.values()):
        return None
    return Batch(
        new, total, {c: Fraction(v, total) for c, v in new.items()}, ranking(choice_ids, new)
    )


def margin_points(choice_ids: Sequence[str], votes: Votes) -> Fraction | None:
    """The margin between the first two as a share of the valid votes (percentage points / 100).

    >>> round(float(margin_points(IDS, PAUSE)) * 100, 1)   # 70.4% to 29.6%
    40.8
    """
    top = ranking(choice_ids, votes)
    return share(votes[top[0]] - votes[top[1]], valid_votes(votes))


@dataclass(frozen=True, slots=True)
class DrawLevel:
    """What it takes the second choice to draw level with the first."""

    chaser: str
    leader: str
    gap: int
    """Votes more than the leader the chaser needs from the ballots left."""
    possible: bool
    """Whether the ballots left are enough for it."""


def draw_level(choice_ids: Sequence[str], votes: Votes, pending_ballots: int) -> DrawLevel | None:
    """What the second choice needs to draw level with the first; None when they are level.

    >>> draw_level(IDS, PAUSE, 1652)   # Yes needs 637 more votes than No of the 1,652 left
    DrawLevel(chaser='yes', leader='no', gap=637, possible=True)
    >>> draw_level(IDS, {"yes": 738, "no": 1798}, 505).possible
    False
    """
    first, second = ranking(choice_ids, votes)[:2]
    gap = votes[first] - votes[second]
    if gap == 0:
        return None
    return DrawLevel(second, first, gap, gap <= pending_ballots)


def pace(
    counted_before: int, at_before: datetime, counted_after: int, at_after: datetime
) -> Fraction | None:
    """Ballots counted an hour between two updates; None without time between them or with
    fewer ballots counted (a correction).

    >>> from datetime import UTC
    >>> pace(1563, datetime(2021, 4, 8, 23, tzinfo=UTC), 2163, datetime(2021, 4, 9, 0, 30,
    ...      tzinfo=UTC))   # 600 ballots in an hour and a half
    Fraction(400, 1)
    """
    seconds = (at_after - at_before).total_seconds()
    if seconds <= 0 or counted_after < counted_before:
        return None
    return Fraction(counted_after - counted_before) * 3600 / Fraction(seconds)


def about(rate: Fraction) -> int:
    """A rate said roughly: to two significant figures from 100 up, to the unit below.

    >>> about(Fraction(437)), about(Fraction(1234)), about(Fraction(15, 2)), about(Fraction(2, 5))
    (440, 1200, 8, 0)
    """
    whole = int((rate * 2 + 1) // 2)  # half up
    if whole < 100:
        return whole
    step: int = 10 ** (len(str(whole)) - 2)
    return (whole + step // 2) // step * step


def paused_for(since: datetime, now: datetime) -> timedelta:
    """How long a count has been paused (never negative, whatever the clocks say).

    >>> from datetime import UTC
    >>> paused_for(datetime(2021, 4, 8, 23, tzinfo=UTC), datetime(2021, 4, 9, 8, 10, tzinfo=UTC))
    datetime.timedelta(seconds=33000)
    """
    return max(timedelta(0), now - since)
