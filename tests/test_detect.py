"""Change detection: rejections with reasons, and the events of every accepted update."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.domain.arithmetic import Outcome, OutcomeKind
from bot.domain.detect import Accepted, EventKind, NoChange, Rejected, RejectReason, detect
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from tests.helpers import T0, bessemer, tally


def accepted(prev: Tally | None, new: Tally, count: Count | None = None) -> Accepted:
    result = detect(count or bessemer(), prev, new)
    assert isinstance(result, Accepted), result
    return result


def kinds(result: Accepted) -> list[EventKind]:
    return [e.kind for e in result.events]


def test_same_figures_are_no_change_even_from_another_source() -> None:
    prev = tally(463, 1100, challenged=505)
    again = replace(tally(463, 1100, challenged=505), source="other", seq=9)
    assert detect(bessemer(), prev, again) == NoChange()


@pytest.mark.parametrize(
    ("prev", "new", "reason", "words"),
    [
        (tally(463, 1100), tally(463, 1099), RejectReason.DECREASE, "no 1,100 -> 1,099"),
        (tally(463, 1100, void=5), tally(463, 1100, void=4), RejectReason.DECREASE, "void 5 -> 4"),
        (None, tally(-1, 3), RejectReason.NEGATIVE, "yes=-1"),
        (None, tally(1, 3, challenged=-2), RejectReason.NEGATIVE, "challenged=-2"),
        (None, tally(2000, 1300), RejectReason.OVER_RECEIVED, "3,300 ballots"),
        (
            None,
            tally(10, 10, challenged=5, received=20),
            RejectReason.OVER_RECEIVED,
            "only 20 received",
        ),
        (
            tally(738, 1798, received=2536, state=TallyState.FINAL),
            tally(738, 1799, received=2537, state=TallyState.FINAL),
            RejectReason.FINAL_CHANGED,
            "correction",
        ),
        (
            None,
            tally(738, 1798, challenged=505, state=TallyState.FINAL),
            RejectReason.FINAL_UNACCOUNTED,
            "174 of the 3,215 ballots received are not yet counted, void or challenged",
        ),
        (None, tally(1, 2, received=5877), RejectReason.OVER_ELIGIBLE, "only 5,876 eligible"),
        (None, tally(10**12 + 1, 2), RejectReason.TOO_LARGE, "yes=1,000,000,000,001"),
        (
            tally(738, 1798, state=TallyState.FINAL),
            tally(738, 1798, state=TallyState.COUNTING),
            RejectReason.FINAL_CHANGED,
            "final",
        ),
        (None, tally(1, 1, count_id="other"), RejectReason.WRONG_COUNT, "'other'"),
    ],
)
def test_rejections_say_why(
    prev: Tally | None, new: Tally, reason: RejectReason, words: str
) -> None:
    result = detect(bessemer(), prev, new)
    assert isinstance(result, Rejected)
    assert result.reason is reason
    assert words in result.detail


def test_unknown_and_missing_choices_are_rejected() -> None:
    bad = Tally("bessemer-2021", {"yes": 1, "no": 2, "maybe": 3}, T0, "x")
    result = detect(bessemer(), None, bad)
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.UNKNOWN_CHOICE
    assert "maybe" in result.detail
    missing = Tally("bessemer-2021", {"yes": 1}, T0, "x")
    result = detect(bessemer(), None, missing)
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.MISSING_CHOICE


def test_a_correction_may_lower_figures_and_change_a_final() -> None:
    r = accepted(tally(463, 1100), tally(463, 1090, correction=True))
    assert EventKind.CORRECTION in kinds(r)
    final = tally(738, 1798, received=2536, state=TallyState.FINAL)
    r = accepted(final, tally(738, 1797, received=2535, state=TallyState.FINAL, correction=True))
    assert EventKind.CORRECTION in kinds(r)


def test_challenged_ballots_may_go_down_as_they_are_resolved() -> None:
    """Resolved: opened into the counted figures, or sustained (issue 24); never vanished."""
    r = accepted(tally(463, 1100, challenged=505), tally(500, 1120, challenged=400, sustained=48))
    assert EventKind.CORRECTION not in kinds(r)
    gone = detect(bessemer(), tally(463, 1100, challenged=505), tally(463, 1100, challenged=400))
    assert isinstance(gone, Rejected)
    assert gone.reason is RejectReason.CHALLENGES_UNEXPLAINED
    assert gone.detail.startswith(
        "105 challenged ballots resolved (challenged 505 -> 400) but only 0 more counted or "
        "sustained"
    )
    fixed = tally(463, 1100, challenged=400, correction=True)  # a correction may say so
    assert isinstance(detect(bessemer(), tally(463, 1100, challenged=505), fixed), Accepted)


def test_received_and_sustained_going_down_are_corrections() -> None:
    for was, now in (({"received": 1500}, {"received": 1300}), ({"sustained": 5}, {})):
        lower = detect(bessemer(), tally(310, 520, **was), tally(600, 700, **now))
        assert isinstance(lower, Rejected), (was, now)
        assert lower.reason is RejectReason.DECREASE
    corrected = tally(600, 700, received=1300, correction=True)
    assert isinstance(detect(bessemer(), tally(310, 520, received=1500), corrected), Accepted)


def test_first_results_and_routine_update() -> None:
    r = accepted(tally(0, 0), tally(84, 201))
    assert kinds(r) == [EventKind.FIRST_RESULTS, EventKind.UPDATE]
    assert r.events[0].choice == "no"
    r = accepted(tally(84, 201), tally(90, 210))
    assert kinds(r) == [EventKind.UPDATE]
    assert not r.significant


def test_lead_change_and_tie() -> None:
    r = accepted(tally(10, 12), tally(14, 14))
    assert EventKind.TIE in kinds(r)
    r = accepted(tally(10, 12), tally(20, 14))
    assert EventKind.LEAD_CHANGE in kinds(r)
    assert r.events[0].choice == "yes"


def test_milestones_each_quarter() -> None:
    r = accepted(tally(300, 500), tally(300, 510))  # 810 of 3,215 = 25.2%
    assert [e.quarter for e in r.events if e.kind is EventKind.MILESTONE] == [1]
    r = accepted(tally(300, 510), tally(330, 600))  # 28.9%: still the first quarter
    assert EventKind.MILESTONE not in kinds(r)


def test_clinched_once_at_the_right_tally() -> None:
    r = accepted(tally(500, 1600), tally(500, 1607))
    assert EventKind.CLINCHED not in kinds(r)
    r = accepted(tally(500, 1607), tally(500, 1608))
    assert EventKind.CLINCHED in kinds(r)
    assert r.events[0].outcome == Outcome(OutcomeKind.WIN, "no")
    r = accepted(tally(500, 1608), tally(520, 1650))
    assert EventKind.CLINCHED not in kinds(r)


def test_call_withdrawn_when_more_ballots_turn_up() -> None:
    r = accepted(tally(500, 1608), tally(500, 1608, received=3300))
    assert EventKind.CALL_WITHDRAWN in kinds(r)
    assert EventKind.CLINCHED not in kinds(r)


def test_determinative_once_everything_is_opened() -> None:
    # 3,041 valid + challenged + 76 void = 3,117 received; No leads by 400 < 505 challenged.
    before = tally(1000, 1400, void=70, challenged=505, received=3117)
    r = accepted(before, tally(1068, 1468, void=76, challenged=505, received=3117))
    assert EventKind.DETERMINATIVE in kinds(r)
    assert r.significant
    resolved = accepted(
        tally(1068, 1468, void=76, challenged=505, received=3117),
        tally(1068, 1768, void=76, challenged=205, received=3117),
    )
    assert EventKind.NOT_DETERMINATIVE in kinds(resolved)
    assert EventKind.CLINCHED in kinds(resolved)


def test_pause_resume_final() -> None:
    assert EventKind.PAUSED in kinds(
        accepted(tally(463, 1100), tally(463, 1100, state=TallyState.PAUSED))
    )
    assert EventKind.RESUMED in kinds(
        accepted(tally(463, 1100, state=TallyState.PAUSED), tally(463, 1100))
    )
    r = accepted(
        tally(700, 1700, void=70, challenged=505),
        tally(738, 1798, void=76, challenged=505, received=3117, state=TallyState.FINAL),
    )
    assert kinds(r)[0] is EventKind.FINAL
    assert EventKind.NOT_DETERMINATIVE in kinds(r)


def test_runoff_certain_is_a_call() -> None:
    three = Count(
        "local-1",
        "Three-way",
        (Choice("a", "A"), Choice("b", "B"), Choice("c", "C")),
        DecisionRule(RuleKind.MAJORITY),
        received=1000,
    )

    def t(a: int, b: int, c: int) -> Tally:
        return Tally("local-1", {"a": a, "b": b, "c": c}, T0, "x")

    r = accepted(t(300, 280, 200), t(400, 350, 240), three)
    assert r.events[0].kind is EventKind.CLINCHED
    assert r.events[0].outcome == Outcome(OutcomeKind.RUNOFF)


def test_events_are_ordered_most_important_first() -> None:
    r = accepted(
        tally(0, 0),
        tally(738, 1798, void=76, challenged=505, received=3117, state=TallyState.FINAL),
    )
    order = kinds(r)
    assert order[0] is EventKind.FINAL
    assert order[-1] is EventKind.UPDATE
    assert order.index(EventKind.CLINCHED) < order.index(EventKind.FIRST_RESULTS)


def test_worked_examples_of_corrections_hold() -> None:
    """The worked examples of what an edit or a correction changed (issue 24) run."""
    import doctest

    from bot.domain import corrections
    from bot.domain import detect as detect_module

    for module in (detect_module, corrections):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0, module
        assert result.failed == 0, module
