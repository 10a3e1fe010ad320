"""Brute force against the engine: for small counts, every completion of the pending ballots.

Each pending ballot (outstanding or challenged) may become a vote for any choice or no vote at
all. The engine's calls must agree with looking at every one of those completions, for every rule.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain import arithmetic as arith
from bot.domain.arithmetic import Outcome, OutcomeKind
from bot.domain.model import DecisionRule, RuleKind

Case = tuple[DecisionRule, tuple[str, ...], dict[str, int], int]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(min_value=2, max_value=4))
    ids = tuple("abcd"[:n])
    kind = draw(st.sampled_from(list(RuleKind)))
    holder: str | None = None
    if not (kind is RuleKind.MAJORITY and n > 2):
        holder = draw(st.none() | st.sampled_from(ids))
    threshold = None
    if kind is RuleKind.THRESHOLD:
        threshold = draw(
            st.sampled_from(
                [Fraction(2, 3), Fraction(3, 5), Fraction(3, 4), Fraction(1, 1), Fraction(51, 100)]
            )
        )
    votes = {c: draw(st.integers(min_value=0, max_value=7)) for c in ids}
    pending = draw(st.integers(min_value=0, max_value=6 if n < 4 else 4))
    return DecisionRule(kind, holder, threshold), ids, votes, pending


def completions(
    ids: tuple[str, ...], votes: dict[str, int], pending: int
) -> Iterator[dict[str, int]]:
    """Every final vote vector: each pending ballot to a choice or to no vote."""
    for extra in itertools.product(range(pending + 1), repeat=len(ids)):
        if sum(extra) <= pending:
            yield {c: votes[c] + e for c, e in zip(ids, extra, strict=True)}


def all_outcomes(case: Case) -> set[Outcome]:
    rule, ids, votes, pending = case
    return {arith.outcome(rule, ids, v) for v in completions(ids, votes, pending)}


@settings(max_examples=600, deadline=None)
@given(cases())
def test_certain_outcome_matches_every_completion(case: Case) -> None:
    rule, ids, votes, pending = case
    seen = all_outcomes(case)
    expected = next(iter(seen)) if len(seen) == 1 else None
    assert arith.certain_outcome(rule, ids, votes, pending) == expected


@settings(max_examples=400, deadline=None)
@given(cases())
def test_can_win_and_contenders_match_brute_force(case: Case) -> None:
    rule, ids, votes, pending = case
    seen = all_outcomes(case)
    winners = tuple(c for c in ids if Outcome(OutcomeKind.WIN, c) in seen)
    assert arith.contenders(rule, ids, votes, pending) == winners
    if rule.kind is RuleKind.MAJORITY and len(ids) > 2:
        assert arith.runoff_certain(rule, ids, votes, pending) == (
            seen == {Outcome(OutcomeKind.RUNOFF)}
        )


@settings(max_examples=300, deadline=None)
@given(cases(), st.data())
def test_votes_to_clinch_is_the_least_that_guarantees_a_win(
    case: Case, data: st.DataObject
) -> None:
    rule, ids, votes, pending = case
    choice = data.draw(st.sampled_from(ids))
    won = Outcome(OutcomeKind.WIN, choice)

    def guaranteed(k: int) -> bool:
        given_k = dict(votes)
        given_k[choice] += k
        return all_outcomes((rule, ids, given_k, pending - k)) == {won}

    expected = next((k for k in range(pending + 1) if guaranteed(k)), None)
    assert arith.votes_to_clinch(rule, ids, votes, pending, choice) == expected


@settings(max_examples=300, deadline=None)
@given(cases())
def test_challenges_determinative_matches_brute_force(case: Case) -> None:
    rule, ids, votes, challenged = case
    seen = all_outcomes(case)
    assert arith.challenges_determinative(rule, ids, votes, challenged) == (len(seen) > 1)


@settings(max_examples=300, deadline=None)
@given(cases())
def test_switches_to_flip_is_the_fewest_moves(case: Case) -> None:
    rule, ids, votes, _ = case
    now = arith.outcome(rule, ids, votes)
    expected: int | None = None
    if now.kind is OutcomeKind.WIN and now.winner is not None:
        w = now.winner
        for rival in ids:
            if rival == w:
                continue
            for k in range(1, votes[w] + 1):
                moved = dict(votes)
                moved[w] -= k
                moved[rival] += k
                if arith.outcome(rule, ids, moved) != now:
                    expected = k if expected is None else min(expected, k)
                    break
    assert arith.switches_to_flip(rule, ids, votes) == expected


@settings(max_examples=200, deadline=None)
@given(cases())
def test_a_call_never_changes_as_ballots_are_counted(case: Case) -> None:
    """Once called, counting any one pending ballot anywhere keeps the call."""
    rule, ids, votes, pending = case
    called = arith.certain_outcome(rule, ids, votes, pending)
    if called is None or pending == 0:
        return
    for c in ids:
        later = dict(votes)
        later[c] += 1
        assert arith.certain_outcome(rule, ids, later, pending - 1) == called
    assert arith.certain_outcome(rule, ids, votes, pending - 1) == called  # one more void


@settings(max_examples=400, deadline=None)
@given(cases())
def test_runoff_places_match_every_completion(case: Case) -> None:
    """Certain of a place: strictly in the top two in every completion. Open: in the top two,
    a tie included, in some completion, but not certain."""
    _, ids, votes, pending = case
    finals = list(completions(ids, votes, pending))

    def strictly_top_two(c: str, v: dict[str, int]) -> bool:
        return sum(1 for r in ids if r != c and v[r] >= v[c]) <= 1

    def could_be_top_two(c: str, v: dict[str, int]) -> bool:
        return sum(1 for r in ids if r != c and v[r] > v[c]) <= 1

    certain = {c for c in ids if all(strictly_top_two(c, v) for v in finals)}
    possible = {c for c in ids if any(could_be_top_two(c, v) for v in finals)}
    places = arith.runoff_places(ids, votes, pending)
    assert set(places.certain) == certain
    assert set(places.open) == possible - certain
    assert len(places.certain) <= 2
