"""The count arithmetic on real counts; the worked examples in the docstrings run here too."""

from __future__ import annotations

import doctest
from datetime import UTC, datetime
from fractions import Fraction

import pytest

import bot.domain.arithmetic as arith
from bot.domain import model, words
from bot.domain.arithmetic import Outcome, OutcomeKind, calls, figures, standing, summary
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState

BESSEMER_RULE = DecisionRule(RuleKind.MAJORITY, tie_holder="no")
YES_NO = ("yes", "no")
T0 = datetime(2021, 4, 8, 22, 0, tzinfo=UTC)


def bessemer(received: int | None = 3215) -> Count:
    return Count(
        "bessemer-2021",
        "Amazon BHM1, Bessemer",
        (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
        BESSEMER_RULE,
        eligible=5876,
        received=received,
    )


def tally(yes: int, no: int, **kw: object) -> Tally:
    return Tally("bessemer-2021", {"yes": yes, "no": no}, T0, "nlrb", **kw)  # type: ignore[arg-type]


def test_worked_examples_in_docstrings_hold() -> None:
    globs = {
        "BESSEMER": BESSEMER_RULE,
        "IDS": YES_NO,
        "PAUSE": {"yes": 463, "no": 1100},
        "Fraction": Fraction,
        "DecisionRule": DecisionRule,
        "RuleKind": RuleKind,
    }
    attempted = failed = 0
    for module in (arith, figures, calls, summary, words, model):
        result = doctest.testmod(module, extraglobs=globs, optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        failed += result.failed
    assert attempted > 40
    assert failed == 0


def test_overnight_pause_matches_the_seed() -> None:
    s = standing(bessemer(), tally(463, 1100))
    assert s.leader == "no"
    assert s.margin == 637
    assert (s.counted, s.received) == (1563, 3215)
    assert s.progress == Fraction(1563, 3215)
    assert dict(s.targets) == {"yes": 1608, "no": 1608}
    assert dict(s.needs) == {"yes": 1145, "no": 508}
    assert s.decided is None
    assert s.determinative is None  # ballots are still unopened
    assert s.contenders == ("yes", "no")


def test_final_bessemer_is_decided_and_challenges_not_determinative() -> None:
    final = tally(738, 1798, void=76, challenged=505, received=3117, state=TallyState.FINAL)
    s = standing(bessemer(), final)
    assert s.decided == Outcome(OutcomeKind.WIN, "no")
    assert s.determinative is False
    assert s.margin == 1060
    assert s.outstanding == 0
    assert s.pending == 505
    assert s.switches_to_flip == 531  # 530 would leave a 1,268 tie, which No holds


def test_no_clinches_exactly_at_1608_of_3215() -> None:
    # 3,215 received, nothing void: 1,607 leaves Yes a path to 1,608.
    assert standing(bessemer(), tally(500, 1607)).decided is None
    s = standing(bessemer(), tally(500, 1608))
    assert s.decided == Outcome(OutcomeKind.WIN, "no")
    assert s.needs["no"] == 0
    assert s.needs["yes"] is None


def test_tie_holder_clinches_on_half_of_an_even_total() -> None:
    # 100 ballots: No holds ties so 50 suffice; Yes needs 51.
    c = bessemer(received=100)
    assert standing(c, tally(0, 50)).decided == Outcome(OutcomeKind.WIN, "no")
    assert standing(c, tally(50, 0)).decided is None
    assert standing(c, tally(51, 0)).decided == Outcome(OutcomeKind.WIN, "yes")


def test_void_ballots_lower_the_bar() -> None:
    # 3,215 received, 76 already void: at most 3,139 valid, so 1,570 clinches for No.
    assert standing(bessemer(), tally(500, 1570, void=76)).decided == Outcome(OutcomeKind.WIN, "no")
    assert standing(bessemer(), tally(500, 1569, void=76)).decided is None


def test_unknown_received_calls_nothing_until_final() -> None:
    c = bessemer(received=None)
    s = standing(c, tally(10, 3000))
    assert s.decided is None
    assert s.needs == {"yes": None, "no": None}
    assert s.progress is None
    final = standing(c, tally(10, 3000, state=TallyState.FINAL))
    assert final.decided == Outcome(OutcomeKind.WIN, "no")


def test_challenges_determinative_when_margin_within_challenged() -> None:
    # All opened; No leads by 400 with 505 challenged: Yes could still take it.
    s = standing(bessemer(), tally(1068, 1468, void=76, challenged=505, received=3117))
    assert s.outstanding == 0
    assert s.decided is None
    assert s.determinative is True
    assert s.contenders == ("yes", "no")


@pytest.mark.parametrize(
    ("votes", "pending", "expected"),
    [
        # 2016 Austrian presidential runoff re-run style: plurality of two.
        ({"a": 2472892, "b": 2124661}, 0, Outcome(OutcomeKind.WIN, "a")),
        ({"a": 10, "b": 10}, 0, Outcome(OutcomeKind.TIE)),
        ({"a": 10, "b": 9}, 1, None),
        ({"a": 10, "b": 8}, 1, Outcome(OutcomeKind.WIN, "a")),
    ],
)
def test_plurality(votes: dict[str, int], pending: int, expected: Outcome | None) -> None:
    rule = DecisionRule(RuleKind.PLURALITY)
    assert arith.certain_outcome(rule, ("a", "b"), votes, pending) == expected


def test_threshold_two_thirds() -> None:
    # A two-thirds motion (e.g. a union constitution change): 200 present.
    rule = DecisionRule(RuleKind.THRESHOLD, tie_holder="no", threshold=Fraction(2, 3))
    assert arith.outcome(rule, YES_NO, {"yes": 134, "no": 66}) == Outcome(OutcomeKind.WIN, "yes")
    assert arith.outcome(rule, YES_NO, {"yes": 133, "no": 67}) == Outcome(OutcomeKind.WIN, "no")
    # 134 of a possible 200 is two thirds whatever the 0 left do.
    assert arith.votes_to_clinch(rule, YES_NO, {"yes": 120, "no": 20}, 60, "yes") == 14
    # No wins once Yes can no longer reach two thirds: 67 No out of 200 blocks it.
    assert arith.votes_to_clinch(rule, YES_NO, {"yes": 0, "no": 60}, 140, "no") == 7


def test_runoff_certain_with_three_choices() -> None:
    # Three unions and "no union" style count: nobody can pass 50%.
    rule = DecisionRule(RuleKind.MAJORITY)
    ids = ("a", "b", "c")
    votes = {"a": 400, "b": 350, "c": 240}
    assert arith.runoff_certain(rule, ids, votes, 10)
    assert not arith.runoff_certain(rule, ids, votes, 300)
    assert arith.contenders(rule, ids, votes, 300) == ("a", "b")
