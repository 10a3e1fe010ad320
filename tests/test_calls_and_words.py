"""Issue 12: the last wrong calls and the words around the numbers, in the pure core.

Each test here is one case of the issue: a message an editor would have had to stop.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from bot.domain import format as fmt
from bot.domain.detect import Accepted, Rejected, RejectReason, detect
from bot.domain.message import Message
from bot.domain.model import MAX_FIGURE, Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.render_text import render
from tests.helpers import T0, bessemer, tally
from tests.test_format import check_golden

FINAL = TallyState.FINAL


def walden(received: int | None = None) -> Count:
    return Count(
        "walden",
        "Walden Books unit",
        (Choice("yes", "Yes"), Choice("no", "No")),
        DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
        eligible=20,
        received=received,
    )


def run(count: Count, *tallies: Tally) -> list[Message]:
    """Every tally through the detector and the formatter, as the pipeline does."""
    out: list[Message] = []
    last: Tally | None = None
    for seq, t in enumerate(tallies, start=1):
        result = detect(count, last, t)
        assert isinstance(result, Accepted), result
        numbered = replace(t, seq=seq)
        previous_seq = last.seq if last else None
        out.append(fmt.for_update(count, replace(result, tally=numbered), previous_seq))
        last = numbered
    return out


def wt(yes: int, no: int, **kw: object) -> Tally:
    return replace(tally(yes, no, count_id="walden"), **kw)  # type: ignore[arg-type]


def text_of(m: Message) -> str:
    return "\n".join([m.headline, *m.lines, *(c.note for c in m.choices)])


# --- Calls that are wrong or mislabelled -------------------------------------------------------


def test_a_final_with_ballots_unopened_is_rejected() -> None:
    result = detect(bessemer(), tally(463, 1100), tally(463, 1100, state=FINAL))
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.FINAL_UNACCOUNTED
    assert "1,652 of the 3,215 ballots received" in result.detail
    # Accounted for (counted, void or challenged): a final is accepted.
    ok = detect(bessemer(), tally(463, 1100), tally(463, 1100, challenged=1652, state=FINAL))
    assert isinstance(ok, Accepted)


def test_a_final_that_leaves_one_ballot_unopened_says_so_in_the_singular() -> None:
    result = detect(walden(17), None, wt(8, 8, state=FINAL))
    assert isinstance(result, Rejected)
    assert "1 of the 17 ballots received is not yet counted" in result.detail


def test_a_reversal_during_the_count_withdraws_the_call_then_names_the_new_one() -> None:
    messages = run(
        walden(),
        wt(8, 8, challenged=1, received=17),
        wt(8, 9, received=17),
        wt(9, 8, received=17, correction=True),
    )
    called, reversed_ = messages[1], messages[2]
    assert called.headline == "No has clinched a majority (unofficial)"
    assert reversed_.headline == (
        "Call withdrawn: the earlier call for No no longer holds. "
        "Yes has clinched a majority (unofficial)"
    )
    assert reversed_.winner == "yes"
    assert [c.note for c in reversed_.choices] == ["clinched", "cannot win"]


def test_a_reversal_after_the_final_keeps_the_final_framing() -> None:
    messages = run(
        walden(),
        wt(8, 8, challenged=1, received=17),
        wt(8, 9, received=17),
        wt(8, 9, received=17, state=FINAL),
        wt(9, 8, received=17, state=FINAL, correction=True),
    )
    final, corrected = messages[2], messages[3]
    assert final.headline == "Final tally: No wins, 9 to 8"
    assert corrected.headline == (
        "Corrected final tally: the earlier call for No is withdrawn; Yes wins, 9 to 8"
    )
    assert corrected.final
    assert corrected.winner == "yes"
    assert str(corrected.footer).startswith("Final tally")
    assert "Correction: these figures replace update #3." in corrected.lines


def test_correcting_a_final_without_reversal_keeps_the_final_framing() -> None:
    messages = run(
        walden(),
        wt(5, 9, received=14, state=FINAL),
        wt(4, 9, received=13, state=FINAL, correction=True),
    )
    assert messages[1].headline == "Corrected final tally: No wins, 9 to 4"


def test_taking_the_lead_from_a_tie_breaks_the_tie() -> None:
    messages = run(bessemer(None), tally(100, 90), tally(100, 100), tally(100, 110))
    assert messages[1].headline == "Tied at 100 each"
    assert messages[1].significant
    assert messages[2].headline == "Tie broken: No union leads by 10"  # (issue 24: not who led)
    assert messages[2].significant


def test_every_change_of_the_leading_group_is_significant_with_three_choices() -> None:
    three = Count(
        "board",
        "Board",
        (Choice("a", "Ana"), Choice("b", "Ben"), Choice("c", "Cara")),
        DecisionRule(RuleKind.PLURALITY),
    )

    def t(a: int, b: int, c: int) -> Tally:
        return Tally("board", {"a": a, "b": b, "c": c}, T0, "x")

    messages = run(three, t(5, 5, 1), t(5, 5, 5), t(5, 6, 5))
    assert messages[1].headline == "Ana, Ben and Cara tied at 5"
    assert messages[1].significant
    assert messages[2].headline == "Tie broken: Ben leads by 1"


def runoff_count(received: int = 100) -> Count:
    return Count(
        "council",
        "Council seat",
        (Choice("ana", "Ana Ruiz"), Choice("ben", "Ben Okafor"), Choice("cara", "Cara Diaz")),
        DecisionRule(RuleKind.MAJORITY),
        received=received,
    )


def ct(ana: int, ben: int, cara: int, **kw: object) -> Tally:
    votes = {"ana": ana, "ben": ben, "cara": cara}
    return Tally("council", votes, T0, "clerk", **kw)  # type: ignore[arg-type]


def test_a_tie_for_the_last_runoff_place_is_said_as_such() -> None:
    (m,) = run(runoff_count(), ct(40, 30, 30, state=FINAL))
    assert m.headline == (
        "Final tally: no majority; Ana Ruiz goes to a runoff. Ben Okafor and Cara Diaz are tied "
        "for second place: the count alone does not decide who joins the runoff"
    )
    assert [c.note for c in m.choices] == ["to the runoff", "tied for second", "tied for second"]
    assert "runoff between" not in text_of(m)


def test_a_three_way_tie_at_the_top_decides_no_runoff_place() -> None:
    (m,) = run(runoff_count(90), ct(30, 30, 30, state=FINAL))
    assert m.headline == (
        "Final tally: no majority; Ana Ruiz, Ben Okafor and Cara Diaz are tied for first place: "
        "the count alone does not decide who is in the runoff"
    )


def test_challenged_ballots_that_could_change_a_runoff_place_are_said() -> None:
    (m,) = run(runoff_count(), ct(40, 30, 28, challenged=2, state=FINAL))
    assert m.headline == (
        "Final tally: no majority; Ana Ruiz goes to a runoff. Second place between Ben Okafor and "
        "Cara Diaz is too close to call: 2 challenged ballots could change it"
    )
    assert "The 2 challenged ballots cannot prevent a runoff but could change who is in it." in (
        m.lines
    )
    assert "cannot change the result" not in text_of(m)


def test_a_clear_runoff_still_names_both() -> None:
    (m,) = run(runoff_count(), ct(40, 35, 25, state=FINAL))
    assert m.headline == "Final tally: no majority; a runoff between Ana Ruiz and Ben Okafor"


# --- Words ------------------------------------------------------------------------------------


def test_a_final_tie_held_by_the_tie_holder_is_not_a_win() -> None:
    (m,) = run(walden(8), wt(4, 4, state=FINAL))
    assert m.headline == "Final tally: tied at 4 each; Yes falls short of a majority"
    assert " wins" not in m.headline


def ratify(holder: str | None = "reject") -> Count:
    return Count(
        "contract",
        "Contract ratification",
        (Choice("ratify", "Ratify"), Choice("reject", "Reject")),
        DecisionRule(RuleKind.THRESHOLD, tie_holder=holder, threshold=Fraction(2, 3)),
        received=100,
    )


def rt(ratify_: int, reject: int, **kw: object) -> Tally:
    votes = {"ratify": ratify_, "reject": reject}
    return Tally("contract", votes, T0, "union", **kw)  # type: ignore[arg-type]


def test_a_threshold_vote_that_falls_short_says_so() -> None:
    (m,) = run(ratify(), rt(60, 40, state=FINAL))
    assert m.headline == "Final tally: Ratify falls short of two-thirds (60.0%)"
    (m,) = run(ratify(None), rt(60, 40, state=FINAL))
    assert m.headline == "Final tally: no choice reaches two-thirds (Ratify has 60.0%)"


def test_two_thirds_in_prose() -> None:
    (m,) = run(ratify(), rt(67, 0))
    assert m.headline == "Ratify has clinched two-thirds of the valid votes (unofficial)"
    assert "2/3" not in text_of(m)
    assert ratify().rule.describe() == "at least two-thirds of valid votes"


def test_a_final_with_no_valid_votes_says_so() -> None:
    (m,) = run(walden(3), wt(0, 0, void=3, state=FINAL))
    assert m.headline == "Final tally: no valid votes"
    assert " wins" not in text_of(m)


@pytest.mark.parametrize(
    ("figures", "words"),
    [
        (wt(4, 4, challenged=1, received=9), "Too close to call: 1 challenged ballot could change"),
        (wt(4, 4, challenged=1, received=9), "8 of 9 ballots counted"),
        (wt(2, 6, challenged=1, received=9), "The 1 challenged ballot cannot change the result"),
        (wt(0, 1, received=1), "1 of 1 ballot counted (100.0%)"),
        (wt(1, 2, received=3), "It would take 1 ballot switching sides"),
    ],
)
def test_singular_with_one(figures: Tally, words: str) -> None:
    (m,) = run(walden(), figures)
    assert words in text_of(m)
    assert "1 challenged ballots" not in text_of(m)
    assert "1 ballots" not in text_of(m)


def test_one_eligible_voter_and_one_vote() -> None:
    solo = Count(
        "solo",
        "Solo",
        (Choice("a", "A"), Choice("b", "B"), Choice("c", "C")),
        DecisionRule(RuleKind.PLURALITY),
        eligible=1,
        received=1,
    )
    (m,) = run(solo, Tally("solo", {"a": 1, "b": 0, "c": 0}, T0, "x", state=FINAL))
    assert m.headline == "Final tally: A wins with 1 vote (100.0%)"
    assert "Turnout: 100.0% of 1 eligible voter." in m.lines


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(9995, 10000), ">99.9%"),
        (Fraction(9999, 10000), ">99.9%"),
        (Fraction(1, 10000), "<0.1%"),
        (Fraction(1, 2001), "<0.1%"),
        (Fraction(1, 2000), "0.1%"),  # exactly 0.05%: rounds up to 0.1%, which it is
        (Fraction(0), "0.0%"),
        (Fraction(1), "100.0%"),
    ],
)
def test_percentages_never_claim_what_is_not_so(value: Fraction, text: str) -> None:
    assert fmt.pct(value) == text


def test_no_100_percent_counted_while_a_ballot_is_unopened() -> None:
    count = replace(bessemer(10_000), eligible=12_000)
    (m,) = run(count, tally(4000, 5999))
    assert "9,999 of 10,000 ballots counted (>99.9%); 1 not yet opened." in m.lines
    assert "100.0%" not in text_of(m)


def test_a_choice_with_votes_never_shows_zero_percent() -> None:
    count = bessemer(None)
    (m,) = run(count, tally(1, 2999))
    assert [c.share_text for c in m.choices] == ["<0.1%", ">99.9%"]


def test_void_ballots_alone_are_not_first_results() -> None:
    messages = run(bessemer(), tally(0, 0, void=3), tally(1, 0, void=3))
    assert not messages[0].headline.startswith("First results")
    assert not messages[0].significant
    assert messages[1].headline == "First results: Yes (RWDSU) leads by 1"
    assert messages[1].significant


# --- Input -------------------------------------------------------------------------------------


def test_received_above_eligible_is_rejected() -> None:
    result = detect(bessemer(), None, tally(10, 20, received=5877))
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.OVER_ELIGIBLE
    assert "5,877 received but only 5,876 eligible" in result.detail


def test_a_figure_above_the_ceiling_is_rejected_by_the_detector_too() -> None:
    result = detect(bessemer(None), None, tally(MAX_FIGURE + 1, 0))
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.TOO_LARGE
    assert "1,000,000,000,000" in result.detail
    assert isinstance(detect(bessemer(None), None, tally(MAX_FIGURE, 0)), Accepted)
    big = detect(replace(bessemer(None), eligible=None), None, tally(0, 0, received=10**20))
    assert isinstance(big, Rejected)
    assert big.reason is RejectReason.TOO_LARGE


# --- Golden: every case above as it would be posted ----------------------------------------------


def test_the_wording_cases_golden() -> None:
    scenarios: list[tuple[str, Count, list[Tally]]] = [
        (
            "A call reversed by a correction during the count",
            walden(),
            [
                wt(8, 8, challenged=1, received=17),
                wt(8, 9, received=17),
                wt(9, 8, received=17, correction=True),
            ],
        ),
        (
            "A final reversed by a correction",
            walden(),
            [
                wt(8, 9, received=17, state=FINAL),
                wt(9, 8, received=17, state=FINAL, correction=True),
            ],
        ),
        ("A final tie held by the tie holder", walden(8), [wt(4, 4, state=FINAL)]),
        ("One of everything", walden(), [wt(0, 1, received=3), wt(1, 1, challenged=1, received=3)]),
        ("A lead taken from a tie", bessemer(None), [tally(100, 100), tally(100, 110)]),
        ("A tie for the last runoff place", runoff_count(), [ct(40, 30, 30, state=FINAL)]),
        (
            "A runoff place the challenged ballots could change",
            runoff_count(),
            [ct(40, 30, 28, challenged=2, state=FINAL)],
        ),
        ("A two-thirds vote that falls short", ratify(), [rt(2, 1), rt(60, 40, state=FINAL)]),
        ("Only void ballots, then a vote", walden(5), [wt(0, 0, void=3), wt(1, 0, void=3)]),
        # Issue 24: three choices, thresholds, and the race from here.
        ("A runoff possible, then certain", runoff_count(106), [ct(50, 26, 24), ct(52, 28, 25)]),
        ("A runoff whose second place is open", runoff_count(), [ct(40, 30, 28, challenged=2)]),
        (
            "A ratification that passes",
            ratify(),
            [rt(40, 10), rt(70, 30, state=FINAL)],
        ),
        ("Nothing received", walden(0), [wt(0, 0)]),
    ]
    parts = []
    for name, count, tallies in scenarios:
        shown = [f"[{m.significance}] {render(m)}" for m in run(count, *tallies)]
        parts.append(f"== {name}\n\n" + "\n\n".join(shown))
    check_golden("wording.txt", "\n\n".join(parts) + "\n")
