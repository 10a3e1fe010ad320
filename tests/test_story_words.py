"""Issue 24, parts 3, 5 and 6, in the pure core: each case is a sentence we would have had to
retract, or a figure organisers asked for. Through the console and every renderer:
``tests/adapters/test_story_surfaces.py``."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from fractions import Fraction

from bot.domain import format as fmt
from bot.domain.detect import Accepted, detect
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from tests.helpers import T0, bessemer, tally
from tests.test_calls_and_words import ct, ratify, rt, run, runoff_count, text_of, walden, wt

FINAL = TallyState.FINAL


def abc(received: int | None = 106) -> Count:
    return Count(
        "nlrb",
        "Three-way",
        (Choice("a", "A"), Choice("b", "B"), Choice("c", "C")),
        DecisionRule(RuleKind.MAJORITY),
        received=received,
    )


def t3(a: int, b: int, c: int, **kw: object) -> Tally:
    return Tally("nlrb", {"a": a, "b": b, "c": c}, T0, "board", **kw)  # type: ignore[arg-type]


# --- 3. Three choices ---------------------------------------------------------------------------


def test_a_choice_that_can_still_reach_the_runoff_never_cannot_win() -> None:
    (m,) = run(abc(), t3(50, 26, 24))
    assert [c.note for c in m.choices] == [
        "needs 4 more to clinch",
        "could reach a runoff",
        "could reach a runoff",
    ]
    assert "Still able to win a majority: A." in m.lines
    assert "A runoff is possible, between two of A, B and C." in m.lines
    assert "cannot win" not in text_of(m)


def ufcw() -> Count:
    return Count(
        "loc7",
        "Local 7 representation",
        (Choice("ufcw", "UFCW Local 7"), Choice("rwdsu", "RWDSU"), Choice("none", "No union")),
        DecisionRule(RuleKind.MAJORITY),
        received=728,
    )


def test_a_certain_runoff_is_named_before_the_final_and_not_read_as_a_win() -> None:
    def u(a: int, b: int, c: int) -> Tally:
        return Tally("loc7", {"ufcw": a, "rwdsu": b, "none": c}, T0, "nlrb", challenged=18)

    called, settled = run(ufcw(), u(300, 250, 150), u(305, 252, 153))
    assert called.headline == (
        "A runoff between UFCW Local 7 and RWDSU is certain: no choice can reach a majority "
        "(unofficial)"
    )
    assert [c.note for c in called.choices] == [
        "to the runoff",
        "to the runoff",
        "out of the runoff",
    ]
    assert settled.headline == (
        "The 18 challenged ballots cannot change the result: a runoff between UFCW Local 7 and "
        "RWDSU"
    )
    assert "leads by 53" not in settled.headline


def test_a_runoff_whose_second_place_is_open_says_so_before_the_final() -> None:
    (m,) = run(runoff_count(), ct(40, 30, 28, challenged=2))
    assert m.headline == (
        "A runoff is certain: no choice can reach a majority; Ana Ruiz goes to the runoff; the "
        "other place is between Ben Okafor and Cara Diaz (unofficial)"
    )
    assert "the ballots left cannot change it" not in text_of(m)
    assert (
        "A runoff is certain: no choice can reach a majority; Ana Ruiz goes to the runoff; the "
        "other place is between Ben Okafor and Cara Diaz."
    ) in m.lines
    assert "The 2 challenged ballots cannot prevent a runoff but could change who is in it." in (
        m.lines
    )


# --- 3. Threshold counts -------------------------------------------------------------------------


def contract(received: int) -> Count:
    c = ratify()
    return Count(c.id, c.title, c.choices, c.rule, received=received)


def test_a_threshold_count_says_the_share_not_a_lead() -> None:
    (m,) = run(contract(1480), rt(950, 530, state=FINAL))
    assert m.headline == "Final tally: Ratify falls short of two-thirds (64.2%)"
    assert "Ratify has 64.2% of the valid votes (two-thirds needed)." in m.lines
    assert "leads by" not in text_of(m)


def test_a_threshold_clinch_says_who_can_no_longer_reach_it() -> None:
    (m,) = run(contract(1500), rt(950, 530))
    assert m.headline == (
        "Reject has clinched the result: Ratify can no longer reach two-thirds (unofficial)"
    )
    assert "no other choice" not in text_of(m)


def test_a_ratification_that_passes_says_it_cleared_the_threshold_and_with_what() -> None:
    (m,) = run(contract(1400), rt(1000, 400, state=FINAL))
    assert m.headline == (
        "Final tally: Ratify wins with 71.4% of the valid votes, reaching the two-thirds needed "
        "(1,000 to 400)"
    )


def test_a_three_choice_threshold_final_names_who_prevails() -> None:
    count = Count(
        "board",
        "Bylaw vote",
        (Choice("a", "Ana"), Choice("b", "Ben"), Choice("keep", "Keep as is")),
        DecisionRule(RuleKind.THRESHOLD, tie_holder="keep", threshold=Fraction(2, 3)),
        received=100,
    )
    final = Tally("board", {"a": 40, "b": 35, "keep": 25}, T0, "clerk", state=FINAL)
    (m,) = run(count, final)
    assert m.headline == (
        "Final tally: no choice reaches two-thirds (Ana has 40.0%), so Keep as is prevails"
    )
    assert m.winner == "keep"


# --- 5. Sentences we would not print -------------------------------------------------------------


def test_no_ballots_left_is_not_the_ballots_left() -> None:
    (m,) = run(walden(), wt(8, 9, received=17))
    assert "No has clinched a majority; every ballot received has been counted." in m.lines
    assert "ballots left" not in text_of(m)


def test_no_ballots_received_is_no_call() -> None:
    (m,) = run(walden(0), wt(0, 0))
    assert "clinched" not in text_of(m)
    assert m.winner is None
    assert not m.significant
    assert "needs 0" not in text_of(m)
    assert "To clinch" not in text_of(m)
    assert "cannot win" not in text_of(m)


def test_a_final_with_no_valid_votes_never_says_none_counted_yet() -> None:
    (m,) = run(walden(3), wt(0, 0, void=3, state=FINAL))
    assert m.headline == "Final tally: no valid votes"
    assert "No valid votes." in m.lines
    assert "counted yet" not in text_of(m)


def test_a_final_tie_nobody_holds_is_said_once() -> None:
    count = Count(
        "pl",
        "Plurality",
        (Choice("yes", "Yes"), Choice("no", "No")),
        DecisionRule(RuleKind.PLURALITY),
    )
    (m,) = run(count, Tally("pl", {"yes": 50, "no": 50}, T0, "x", state=FINAL))
    assert m.headline == "Final tally: a tie at 50 votes each"


def test_first_results_that_are_a_tie_are_first_results_and_leaving_it_breaks_the_tie() -> None:
    first, broken = run(bessemer(None), tally(5, 5), tally(6, 5))
    assert first.headline == "First results: tied at 5 each"
    assert broken.headline == "Tie broken: Yes (RWDSU) leads by 1"
    assert "Lead change" not in broken.headline


# --- 6. The figures organisers ask for --------------------------------------------------------


def test_the_overnight_pause_in_status_says_what_yes_needs_and_how_long_it_has_been() -> None:
    paused = tally(463, 1100, challenged=505, state=TallyState.PAUSED, seq=6)
    m = fmt.for_status(bessemer(), paused, now=paused.observed_at + timedelta(hours=9, minutes=10))
    assert "No union leads by 637 votes (40.8 points)." in m.lines
    assert (
        "Yes (RWDSU) needs 1,145 of the 1,652 ballots still to be counted or resolved (69.3%) "
        "to clinch; it has 29.6% so far."
    ) in m.lines
    assert (
        "With the 505 challenged ballots set aside, that is 1,145 of the 1,147 unopened (99.8%)."
        in (m.lines)
    )
    assert (
        "To draw level, Yes (RWDSU) needs 637 more votes than No union of the 1,652 ballots left."
        in (m.lines)
    )
    assert "A tie goes to No union." in m.lines
    (note,) = m.notes
    assert str(note) == "Count paused for 9 hours 10 minutes, since 8 Apr 2021 18:00 UTC."


def test_a_significant_post_says_what_the_batch_did() -> None:
    _, milestone = run(bessemer(), tally(700, 320, challenged=505), tally(720, 910, challenged=505))
    assert milestone.significant
    assert "This batch, since update #1: 610 votes; No union 96.7%, Yes (RWDSU) 3.3%." in (
        milestone.lines
    )


def test_the_new_figures_stop_when_the_race_is_decided() -> None:
    (m,) = run(bessemer(), tally(655, 1608, challenged=505))
    assert not any(line.startswith(("This batch", "To draw level")) for line in m.lines)
    assert not any(" needs " in line for line in m.lines)


def test_the_pace_of_counting_is_said_for_a_count_that_asks_for_it() -> None:
    count = replace(bessemer(), pace=True)
    before = tally(84, 201, challenged=505, seq=1)
    after = replace(tally(310, 720, challenged=505, seq=2), observed_at=T0 + timedelta(hours=2))
    result = detect(count, before, after)
    assert isinstance(result, Accepted)
    m = fmt.for_update(count, replace(result, tally=after), 1, before)
    assert "Counting at about 370 ballots an hour since update #1." in m.lines  # 745 in 2 hours
    quiet = fmt.for_update(bessemer(), replace(result, tally=after), 1, before)
    assert not any(line.startswith("Counting at") for line in quiet.lines)  # opt-in
    status = fmt.for_status(count, after, previous=before)
    assert "Counting at about 370 ballots an hour since update #1." in status.lines
    paused = replace(before, state=TallyState.PAUSED)
    resumed = fmt.for_status(count, after, previous=paused)
    assert not any(line.startswith("Counting at") for line in resumed.lines)  # not over a pause
