"""The race from here (``bot.domain.arithmetic.race``): worked examples and brute force.

What a choice could still reach, what a side needs and what it takes to draw level are claims
about what can still happen; each is checked against every completion of the pending ballots of
small counts (``tests/test_arithmetic_exhaustive.py`` has the completions).
"""

from __future__ import annotations

import doctest
from fractions import Fraction

from hypothesis import given, settings

from bot.domain import arithmetic as arith
from bot.domain.arithmetic import OutcomeKind, race
from bot.domain.model import DecisionRule, RuleKind
from tests.test_arithmetic_exhaustive import Case, cases, completions


def test_worked_examples_in_docstrings_hold() -> None:
    globs = {
        "BESSEMER": DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
        "IDS": ("yes", "no"),
        "PAUSE": {"yes": 463, "no": 1100},
        "Fraction": Fraction,
        "DecisionRule": DecisionRule,
        "RuleKind": RuleKind,
    }
    result = doctest.testmod(race, extraglobs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 12
    assert result.failed == 0


@settings(max_examples=800, deadline=None)
@given(cases())
def test_runoff_reachable_matches_every_completion(case: Case) -> None:
    """Reachable: some completion has no majority and at most one rival ahead of the choice."""
    rule, ids, votes, pending = case
    finals = list(completions(ids, votes, pending))
    for c in ids:
        brute = any(
            arith.outcome(rule, ids, v).kind is OutcomeKind.RUNOFF
            and sum(1 for r in ids if r != c and v[r] > v[c]) <= 1
            for v in finals
        )
        assert arith.runoff_reachable(rule, ids, votes, pending, c) == brute, (c, case)
    hopefuls = arith.runoff_hopefuls(rule, ids, votes, pending)
    possible = any(arith.outcome(rule, ids, v).kind is OutcomeKind.RUNOFF for v in finals)
    assert bool(hopefuls) == possible
    assert len(hopefuls) != 1


@settings(max_examples=400, deadline=None)
@given(cases())
def test_draw_level_is_possible_exactly_when_some_completion_is_level(case: Case) -> None:
    _, ids, votes, pending = case
    level = arith.draw_level(ids, votes, pending)
    if level is None:
        return
    brute = any(v[level.chaser] == v[level.leader] for v in completions(ids, votes, pending))
    assert level.possible == brute
    # Level exactly when the chaser gets ``gap`` more of the ballots left than the leader.
    for v in completions(ids, votes, pending):
        gained = (v[level.chaser] - votes[level.chaser]) - (v[level.leader] - votes[level.leader])
        assert (v[level.chaser] == v[level.leader]) == (gained == level.gap)


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_share_needed_is_of_the_least_that_clinches(case: Case) -> None:
    """What a side needs of the ballots left: with that many it has clinched whatever the rest
    do; with one fewer, some completion beats it."""
    rule, ids, votes, pending = case
    for c in ids:
        need = arith.votes_to_clinch(rule, ids, votes, pending, c)
        if need is None or need == 0:
            continue
        share = arith.needed_share(need, pending)
        assert share is not None
        assert 0 < share <= 1
        won = arith.Outcome(OutcomeKind.WIN, c)
        with_need = {**votes, c: votes[c] + need}
        rest = pending - need
        assert all(arith.outcome(rule, ids, v) == won for v in completions(ids, with_need, rest))
        short = {**votes, c: votes[c] + need - 1}
        assert any(arith.outcome(rule, ids, v) != won for v in completions(ids, short, rest + 1))
