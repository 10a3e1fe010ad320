"""Every figure of one tally of one count, computed once: the ``Standing``.

The worked examples use the names set in :mod:`bot.domain.arithmetic` (``BESSEMER``, ``IDS``,
``PAUSE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from bot.domain.arithmetic.calls import (
    Outcome,
    OutcomeKind,
    RunoffPlaces,
    certain_outcome,
    contenders,
    outcome,
    runoff_places,
    switches_to_flip,
    votes_to_clinch,
)
from bot.domain.arithmetic.figures import (
    counted,
    leader,
    margin,
    most_valid_possible,
    outstanding,
    quarter,
    ranking,
    share,
    shares,
    turnout,
    valid_votes,
)
from bot.domain.model import Count, Tally, TallyState


@dataclass(frozen=True, slots=True)
class Standing:
    """All the figures for one tally of one count, computed once."""

    votes: Mapping[str, int]
    valid: int
    counted: int
    challenged: int
    sustained: int
    """Challenged ballots whose challenge was upheld: resolved, never counted."""
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
    runoff: RunoffPlaces | None
    """When a runoff is certain: who is in it, and which places the count leaves open."""


def standing(count: Count, tally: Tally) -> Standing:
    """Compute every figure for ``tally``.

    >>> from datetime import datetime, UTC
    >>> from bot.domain.model import Choice
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
    if not valid_votes(votes) and tally.state is not TallyState.FINAL:
        decided = None  # no call on no votes (``received=0``): nothing has been decided yet
    needs = {c: votes_to_clinch(rule, ids, votes, pend, c) for c in ids}
    if decided is not None:
        determinative: bool | None = False
    elif out == 0:
        determinative = tally.challenged > 0
    else:
        determinative = None
    runoff = None
    if decided is not None and decided.kind is OutcomeKind.RUNOFF and pend is not None:
        runoff = runoff_places(ids, votes, pend)
    return Standing(
        votes=dict(votes),
        valid=valid_votes(votes),
        counted=done,
        challenged=tally.challenged,
        sustained=tally.sustained,
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
        runoff=runoff,
    )
