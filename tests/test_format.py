"""The formatter's wording, pinned by a golden file, and the rules it must never break."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from bot.domain import format as fmt
from bot.domain.detect import Accepted, detect
from bot.domain.message import Message
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.render_text import render
from tests.helpers import T0, bessemer, tally

GOLDEN = Path(__file__).parent / "golden"
TIMELINE = Path(__file__).parents[1] / "bot" / "data" / "bessemer-2021.jsonl"


def replay_messages(count: Count, tallies: list[Tally]) -> list[Message]:
    out: list[Message] = []
    last: Tally | None = None
    for seq, t in enumerate(tallies, start=1):
        result = detect(count, last, t)
        assert isinstance(result, Accepted), result
        numbered = replace(t, seq=seq)
        result = replace(result, tally=numbered)
        out.append(fmt.for_update(count, result, last.seq if last else None))
        last = numbered
    return out


def bessemer_timeline() -> list[Tally]:
    out = []
    for line in TIMELINE.read_text().splitlines():
        row = json.loads(line)
        out.append(
            Tally(
                "bessemer-2021",
                row["votes"],
                T0,
                "nlrb-stream",
                void=row["void"],
                challenged=row["challenged"],
                received=row["received"],
                state=TallyState(row["state"]),
                correction=row.get("correction", False),
                sustained=row.get("sustained", 0),
            )
        )
    return out


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TALLYBOT_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text()


def test_bessemer_count_golden() -> None:
    messages = replay_messages(bessemer(), bessemer_timeline())
    text = "\n\n".join(f"[{m.significance}] " + render(m) for m in messages) + "\n"
    check_golden("bessemer-2021.txt", text)


def test_three_way_count_golden() -> None:
    count = Count(
        "local-2110",
        "Bargaining unit representation, three-way",
        (Choice("a", "Union A"), Choice("b", "Union B"), Choice("none", "No union")),
        DecisionRule(RuleKind.MAJORITY),
        eligible=1200,
        received=1000,
    )

    def t(a: int, b: int, c: int, state: TallyState = TallyState.COUNTING, void: int = 0) -> Tally:
        votes = {"a": a, "b": b, "none": c}
        return Tally("local-2110", votes, T0, "sheet", void=void, state=state)

    final = t(405, 350, 240, TallyState.FINAL, void=5)  # every ballot received accounted for
    run = [t(120, 90, 60), t(300, 280, 200), t(400, 350, 240), final]
    messages = replay_messages(count, run)
    check_golden("three-way.txt", "\n\n".join(render(m) for m in messages) + "\n")


def test_message_survives_the_outbox_json() -> None:
    messages = replay_messages(bessemer(), bessemer_timeline())
    for m in messages:
        assert Message.from_json(m.to_json()) == m


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Fraction(1563, 3215), "48.6%"),
        (Fraction(1, 8), "12.5%"),  # exactly half a tenth: rounds up
        (Fraction(1, 3), "33.3%"),
        (Fraction(2, 3), "66.7%"),
        (Fraction(0), "0.0%"),
        (Fraction(1), "100.0%"),
        (Fraction(9995, 10000), ">99.9%"),  # short of all is never 100.0%
        (None, "-"),
    ],
)
def test_percentages_have_one_decimal(value: Fraction | None, text: str) -> None:
    assert fmt.pct(value) == text


def test_nobody_wins_before_it_is_decided_and_all_is_unofficial_until_final() -> None:
    messages = replay_messages(bessemer(), bessemer_timeline())
    for m in messages:
        words = (m.headline + " ".join(m.lines)).lower()
        if not m.final:
            assert " wins" not in words
            assert str(m.footer).startswith("Unofficial")
        if m.winner is None:
            assert "clinched" not in m.headline
    assert messages[-1].final
    assert "subject to objections and certification" in " ".join(messages[-1].lines)


def test_clinched_appears_at_1608_and_only_once() -> None:
    messages = replay_messages(bessemer(), bessemer_timeline())
    clinched = [m for m in messages if "clinched" in m.headline]
    assert len(clinched) == 1
    assert clinched[0].headline == "No union has clinched a majority (unofficial)"
    assert [c.votes for c in clinched[0].choices] == [655, 1608]


def test_too_close_to_call_when_challenges_are_determinative() -> None:
    before = tally(1000, 1400, void=70, challenged=505, received=3117)
    after = tally(1068, 1468, void=76, challenged=505, received=3117, seq=2)
    result = detect(bessemer(), before, after)
    assert isinstance(result, Accepted)
    m = fmt.for_update(bessemer(), result, 1)
    assert m.headline == "Too close to call: 505 challenged ballots could change the result"
    assert m.significant


def test_status_of_the_overnight_pause() -> None:
    m = fmt.for_status(bessemer(), tally(463, 1100, challenged=505, state=TallyState.PAUSED))
    assert m.headline == "Count paused: No union leads by 637"  # issue 24: a status says so
    assert "1,563 of 3,215 ballots counted (48.6%)" in " ".join(m.lines)
    assert "A side needs 1,608 to clinch." in m.lines
    assert [c.note for c in m.choices] == [
        "needs 1,145 more to clinch",
        "needs 508 more to clinch",
    ]
    assert not m.significant
