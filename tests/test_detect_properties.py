"""Properties of change detection over random counts, for every rule.

A call ("clinched", "runoff certain") is checked against brute force: every way the pending
ballots could still be counted.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain import arithmetic as arith
from bot.domain.arithmetic import Outcome
from bot.domain.detect import Accepted, EventKind, NoChange, Rejected, RejectReason, detect
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from tests.helpers import T0


@st.composite
def counts(draw: st.DrawFn) -> Count:
    n = draw(st.integers(min_value=2, max_value=3))
    ids = "abc"[:n]
    kind = draw(st.sampled_from(list(RuleKind)))
    holder = None
    if not (kind is RuleKind.MAJORITY and n > 2):
        holder = draw(st.none() | st.sampled_from(ids))
    threshold = Fraction(2, 3) if kind is RuleKind.THRESHOLD else None
    return Count(
        "prop",
        "Property count",
        tuple(Choice(c, c.upper()) for c in ids),
        DecisionRule(kind, holder, threshold),
        received=draw(st.integers(min_value=0, max_value=9)),
    )


@st.composite
def walks(draw: st.DrawFn) -> tuple[Count, list[Tally]]:
    """A count and a run of tallies whose figures only go up, within the ballots received;
    challenged ballots that leave the pile unopened are sustained (issue 24)."""
    count = draw(counts())
    assert count.received is not None
    votes = dict.fromkeys(count.choice_ids, 0)
    void = challenged = sustained = 0
    run: list[Tally] = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        room = count.received - sum(votes.values()) - void - challenged - sustained
        for c in count.choice_ids:
            add = draw(st.integers(min_value=0, max_value=room))
            votes[c] += add
            room -= add
        add_void = draw(st.integers(min_value=0, max_value=room))
        void += add_void
        room -= add_void
        was = challenged
        challenged = draw(st.integers(min_value=0, max_value=challenged + room))
        sustained += max(was - challenged, 0)
        state = draw(st.sampled_from([TallyState.COUNTING, TallyState.PAUSED]))
        run.append(
            Tally(
                "prop",
                dict(votes),
                T0,
                "walk",
                void=void,
                challenged=challenged,
                state=state,
                sustained=sustained,
            )
        )
    if draw(st.booleans()):
        last = run[-1]
        run.append(
            Tally(
                "prop",
                dict(last.votes),
                T0,
                "walk",
                void=last.void,
                challenged=last.challenged,
                sustained=last.sustained,
                received=arith.accounted(last),
                state=TallyState.FINAL,  # a final accounts for every ballot received
            )
        )
    return count, run


def brute_decided(count: Count, t: Tally) -> Outcome | None:
    """The outcome every completion agrees on; none before any valid vote while counting (a
    count with nothing counted calls nothing, issue 24)."""
    pending = arith.pending(t, count.received)
    assert pending is not None
    if not sum(t.votes.values()) and t.state is not TallyState.FINAL:
        return None
    ids = count.choice_ids
    seen = set()
    for extra in itertools.product(range(pending + 1), repeat=len(ids)):
        if sum(extra) <= pending:
            final = {c: t.votes[c] + e for c, e in zip(ids, extra, strict=True)}
            seen.add(arith.outcome(count.rule, ids, final))
    return next(iter(seen)) if len(seen) == 1 else None


@settings(max_examples=300, deadline=None)
@given(walks())
def test_calls_are_announced_once_exactly_when_brute_force_agrees(
    walk: tuple[Count, list[Tally]],
) -> None:
    count, run = walk
    last: Tally | None = None
    called: Outcome | None = None
    announcements = 0
    for t in run:
        result = detect(count, last, t)
        if isinstance(result, NoChange):
            assert last is not None
            assert last.figures() == t.figures()
            continue
        assert isinstance(result, Accepted), result
        truth = brute_decided(count, t)
        assert result.standing.decided == truth
        clinched = [e for e in result.events if e.kind is EventKind.CLINCHED]
        assert bool(clinched) == (truth is not None and truth != called)
        assert not any(e.kind is EventKind.CALL_WITHDRAWN for e in result.events)
        announcements += len(clinched)
        if truth is not None:
            called = truth
        assert result.events[-1].kind is EventKind.UPDATE
        last = t
    assert announcements <= 1  # figures only went up: a call is made once and never withdrawn


@settings(max_examples=200, deadline=None)
@given(walks(), st.data())
def test_any_decrease_without_correction_is_rejected(
    walk: tuple[Count, list[Tally]], data: st.DataObject
) -> None:
    count, run = walk
    prev = run[-1]
    if prev.state is TallyState.FINAL:
        prev = Tally("prop", dict(prev.votes), T0, "w", void=prev.void, challenged=prev.challenged)
    choice = data.draw(st.sampled_from(count.choice_ids))
    if prev.votes[choice] == 0:
        return
    lower = dict(prev.votes)
    lower[choice] -= 1
    new = Tally("prop", lower, T0, "w", void=prev.void, challenged=prev.challenged)
    result = detect(count, prev, new)
    assert isinstance(result, Rejected)
    assert result.reason is RejectReason.DECREASE
    corrected = Tally(
        "prop", lower, T0, "w", void=prev.void, challenged=prev.challenged, correction=True
    )
    fixed = detect(count, prev, corrected)
    assert isinstance(fixed, Accepted)
    assert any(e.kind is EventKind.CORRECTION for e in fixed.events)


@settings(max_examples=200, deadline=None)
@given(walks())
def test_event_flags_match_the_figures(walk: tuple[Count, list[Tally]]) -> None:
    count, run = walk
    last: Tally | None = None
    for t in run:
        result = detect(count, last, t)
        if not isinstance(result, Accepted):
            continue
        s, p = result.standing, result.previous
        ks = {e.kind for e in result.events}
        assert (EventKind.LEAD_CHANGE in ks) == bool(
            p is not None and p.valid > 0 and s.leader and p.leader != s.leader
        )  # a lead taken from a tie is a lead change too
        assert (EventKind.FINAL in ks) == (t.state is TallyState.FINAL)
        assert (EventKind.PAUSED in ks) == (
            t.state is TallyState.PAUSED and (last is None or last.state is not TallyState.PAUSED)
        )
        assert (EventKind.MILESTONE in ks) == (s.quarter > (p.quarter if p else 0))
        assert result.significant == (ks != {EventKind.UPDATE})
        last = t
