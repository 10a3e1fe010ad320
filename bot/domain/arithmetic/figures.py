"""What has been counted and what is left: valid votes, shares, outstanding and pending ballots.

The worked examples use the names set in :mod:`bot.domain.arithmetic` (``BESSEMER``, ``IDS``,
``PAUSE``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from bot.domain.model import Tally, TallyState

Votes = Mapping[str, int]


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
    >>> from dataclasses import replace   # 5 of the challenges sustained: resolved, not counted
    >>> outstanding(replace(t, challenged=500, sustained=5), 3215)
    1147
    """
    if tally.state is TallyState.FINAL:
        return 0
    if received is None:
        return None
    return received - accounted(tally)


def accounted(tally: Tally) -> int:
    """Ballots opened or set aside: counted, challenged, or challenged and sustained. A
    ballot that leaves the challenged pile goes to the counted figures or to the sustained
    ones, so this never falls when challenges are resolved.

    >>> from datetime import datetime, UTC
    >>> t = Tally("b", PAUSE, datetime(2021, 4, 8, tzinfo=UTC), "nlrb", challenged=500,
    ...           sustained=5)
    >>> accounted(t)   # 1,563 counted + 500 challenged + 5 sustained
    2068
    """
    return counted(tally) + tally.challenged + tally.sustained


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
