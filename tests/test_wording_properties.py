"""The rules of wording, over random counts of every rule and every kind of message.

Random tallies for every rule (majority with and without a tie holder, plurality, threshold; two
and three choices; with void and challenged ballots) go through the detector and the formatter
as the pipeline would send them: counting, pauses, more ballots received, corrections (reversals
included), finals and corrected finals, and the status of each; and (issue 24) edits of the
count's rule, tie holder, threshold and ballots received, ballots received corrected down, and
challenged ballots resolved (opened or sustained). Every message must keep the rules: nobody
"wins" unless the count is final and decided; "clinched" only when certain; every number of
1,000 or more has its separator; singular with 1; no "100.0%" while ballots are unopened; no
percentage over 100; a call withdrawn, an edit that changes a call, fewer ballots received and
challenges resolved are said, never silent; a paused count says so; "Count resumed" only after
a pause.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.domain import arithmetic as arith
from bot.domain import format as fmt
from bot.domain.arithmetic import Standing
from bot.domain.detect import Accepted, detect
from bot.domain.message import Message
from bot.domain.model import Choice, Count, DecisionRule, RuleKind, Tally, TallyState
from bot.domain.words import fraction_words
from tests.helpers import T0

FINAL = TallyState.FINAL


@st.composite
def counts(draw: st.DrawFn) -> Count:
    n = draw(st.integers(min_value=2, max_value=3))
    ids = ("a", "b", "c")[:n]
    kind = draw(st.sampled_from(list(RuleKind)))
    holder = None
    if not (kind is RuleKind.MAJORITY and n > 2):
        holder = draw(st.none() | st.sampled_from(ids))
    threshold = None
    if kind is RuleKind.THRESHOLD:
        threshold = draw(st.sampled_from([Fraction(2, 3), Fraction(3, 5), Fraction(3, 4)]))
    received = draw(st.none() | st.integers(0, 12) | st.integers(900, 4000))
    eligible = None
    if draw(st.booleans()):
        eligible = (received or 0) + draw(st.integers(0, 3000))
    labels = {"a": "Ana", "b": "Ben", "c": "Cara"}
    return Count(
        "prop",
        "Property count",
        tuple(Choice(c, labels[c]) for c in ids),
        DecisionRule(kind, holder, threshold),
        eligible=eligible,
        received=received,
    )


@dataclass
class Walk:
    count: Count
    tallies: list[Tally]
    counts: list[Count]
    """The count's settings in force at each tally (an edit changes them)."""


STEPS = (
    "count",
    "count",
    "count",
    "pause",
    "more",
    "correct",
    "final",
    "edit",
    "fewer",
    "resolve",
)


def edited(draw: st.DrawFn, count: Count) -> Count:
    """The count with its rule, tie holder, threshold or labels edited."""
    rule = count.rule
    options = ["label"]
    if rule.kind is RuleKind.THRESHOLD:
        options.append("threshold")
    if not (rule.kind is RuleKind.MAJORITY and len(count.choices) > 2):
        options.append("tie")
    what = draw(st.sampled_from(options))
    if what == "threshold":
        t = draw(st.sampled_from([Fraction(2, 3), Fraction(3, 5), Fraction(3, 4)]))
        return replace(count, rule=replace(rule, threshold=t))
    if what == "tie":
        holder = draw(st.none() | st.sampled_from(count.choice_ids))
        return replace(count, rule=replace(rule, tie_holder=holder))
    c = draw(st.sampled_from(range(len(count.choices))))
    renamed = replace(count.choices[c], label=count.choices[c].label + " Jr")
    return replace(count, choices=(*count.choices[:c], renamed, *count.choices[c + 1 :]))


@st.composite
def walks(draw: st.DrawFn) -> Walk:
    """A count and tallies through every kind of step; a final is followed only by corrections."""
    count = draw(counts())
    ids = count.choice_ids
    votes = dict.fromkeys(ids, 0)
    void = challenged = sustained = 0
    received = count.received
    state = TallyState.COUNTING
    out: list[Tally] = []
    settings: list[Count] = []

    def opened() -> int:
        return sum(votes.values()) + void + challenged + sustained

    def room() -> int:
        return (received if received is not None else opened() + 3000) - opened()

    for _ in range(draw(st.integers(1, 10))):
        step = draw(st.sampled_from(STEPS))
        correction = False
        if step == "edit":  # edit a setting; on a final only as a correction (correction=yes)
            count = edited(draw, count)
            correction = state is FINAL
        elif step == "fewer" and received is not None and received > opened():
            received = draw(st.integers(opened(), received - 1))  # only with correct
            correction = True
        elif step == "resolve" and challenged:
            resolved = draw(st.integers(1, challenged))
            upheld = draw(st.integers(0, resolved))
            votes[draw(st.sampled_from(ids))] += resolved - upheld
            challenged -= resolved
            sustained += upheld
        elif state is FINAL:  # only a correction changes a final: move ballots between choices
            src, dst = draw(st.sampled_from(ids)), draw(st.sampled_from(ids))
            k = draw(st.integers(0, votes[src]))
            votes[src] -= k
            votes[dst] += k
            correction = True
        elif step == "count":
            for c in ids:
                votes[c] += draw(st.integers(0, max(0, room())))
            void += draw(st.integers(0, max(0, min(room(), 5))))
            challenged = draw(st.integers(0, max(0, challenged + room())))
            state = TallyState.COUNTING
        elif step == "pause":
            state = TallyState.PAUSED
        elif step == "more":
            extra = draw(st.integers(1, 1500))
            limit = count.eligible if count.eligible is not None else None
            base = received if received is not None else opened()
            received = base + extra if limit is None else min(limit, base + extra)
        elif step == "correct":
            c = draw(st.sampled_from(ids))
            votes[c] = draw(st.integers(0, votes[c] + max(0, room())))
            correction = True
        else:
            left = max(0, room()) if received is not None else 0
            share = draw(st.integers(0, left))
            votes[draw(st.sampled_from(ids))] += share
            challenged += left - share
            state = FINAL
        out.append(
            Tally(
                "prop",
                dict(votes),
                T0,
                "walk",
                void=void,
                challenged=challenged,
                received=received,
                state=state,
                correction=correction,
                sustained=sustained,
            )
        )
        settings.append(count)
    return Walk(settings[0], out, settings)


def messages(walk: Walk) -> list[tuple[Message, Standing]]:
    """Each accepted update's message and the status after it, with the figures behind them."""
    return [(m, s) for m, s, _ in told(walk)]


@dataclass(frozen=True)
class Told:
    """What one accepted update changed, for the rules of what must be said."""

    previous: Tally | None
    tally: Tally
    accepted: Accepted | None
    """None: the status after it."""
    count: Count
    """The count's settings it was worded under (an edit may have changed them)."""


def told(walk: Walk) -> list[tuple[Message, Standing, Told]]:
    """As :func:`messages`, with what each accepted update changed. An edit is weighed as the
    pipeline weighs it (``detect`` with the settings before, ``was``)."""
    out: list[tuple[Message, Standing, Told]] = []
    last: Tally | None = None
    was = walk.count
    for seq, (t, count) in enumerate(zip(walk.tallies, walk.counts, strict=True), start=1):
        result = detect(count, last, t, was=was if count != was else None)
        was = count
        if not isinstance(result, Accepted):
            continue
        stored = replace(t, seq=seq)
        accepted = replace(result, tally=stored)
        previous_seq = last.seq if last else None
        update = fmt.for_update(count, accepted, previous_seq)
        out.append((update, result.standing, Told(last, stored, accepted, count)))
        out.append(
            (fmt.for_status(count, stored), result.standing, Told(last, stored, None, count))
        )
        last = stored
    return out


def prose(m: Message) -> str:
    """Everything a reader sees but the footer (whose date has a four-digit year)."""
    parts = [m.headline, *m.lines]
    for c in m.choices:
        parts.append(f"{c.label} {c.votes_text} {c.share_text} {c.note}")
    return "\n".join(parts)


def brute_certain(count: Count, s: Standing) -> bool:
    """Whether every completion of the pending ballots gives the same outcome."""
    assert s.pending is not None
    ids = count.choice_ids
    seen = set()
    for extra in itertools.product(range(s.pending + 1), repeat=len(ids)):
        if sum(extra) <= s.pending:
            final = {c: s.votes[c] + e for c, e in zip(ids, extra, strict=True)}
            seen.add(arith.outcome(count.rule, ids, final))
    return len(seen) == 1


AGREEMENT = re.compile(
    r"(?<![\d,.#])(\d[\d,]*) (?:of (?:the )?(\d[\d,]*) )?"
    r"((?:challenged |eligible )?)(ballot|vote|voter|update|challenge)(s?)\b"
)
PERCENT = re.compile(r"(\d+(?:\.\d)?)%")


@settings(max_examples=400, deadline=None)
@given(walks())
def test_every_message_keeps_the_rules_of_wording(walk: Walk) -> None:
    for m, s, what in told(walk):
        count = what.count  # the settings it was worded under: an edit may change the rule
        text = prose(m)
        # Nobody "wins" unless the count is final and decided.
        if re.search(r"\bwins\b", text) or any(c.note == "winner" for c in m.choices):
            assert m.final, text
            assert s.decided is not None, text
        # "clinched" only when certain.
        if "clinched" in text:
            assert s.decided is not None, text
            if s.pending is not None and s.pending <= 8:
                assert brute_certain(count, s), text
        # Every number of 1,000 or more has its separator.
        assert not re.search(r"\d{4,}", text), text
        # Singular with 1, plural otherwise: the noun agrees with the number that governs it.
        for match in AGREEMENT.finditer(text):
            governing = match.group(2) or match.group(1)
            assert (match.group(5) == "") == (governing == "1"), (match.group(0), text)
        # No "100.0%" while ballots are unopened; a share is 100.0% only when it is all.
        if s.outstanding:  # (turnout may be 100.0%: every eligible voter's ballot is in)
            said = [m.headline, *(x for x in m.lines if not x.startswith("Turnout"))]
            assert "100.0%" not in "\n".join(said), text
        for c in m.choices:
            if c.share_text == "100.0%":
                assert c.votes == s.valid, text
            if c.share_text == "0.0%":
                assert c.votes == 0, text
        # No percentage over 100.
        for value in PERCENT.findall(text):
            assert float(value) <= 100.0, text
        # "First results" only with valid votes.
        if m.headline.startswith("First results"):
            assert s.valid > 0, text


def completions(count: Count, s: Standing) -> list[dict[str, int]]:
    """Every final vote vector of a small count: each pending ballot to a choice or to none."""
    assert s.pending is not None
    ids = count.choice_ids
    return [
        {c: s.votes[c] + e for c, e in zip(ids, extra, strict=True)}
        for extra in itertools.product(range(s.pending + 1), repeat=len(ids))
        if sum(extra) <= s.pending
    ]


def in_top_two(ids: tuple[str, ...], v: dict[str, int], c: str) -> bool:
    """In the top two, a tie for a place included."""
    return sum(1 for r in ids if r != c and v[r] > v[c]) <= 1


NEEDS = r" needs (?:([\d,]+) of the ([\d,]+) ballots?|the 1 ballot|all ([\d,]+))"
"""What a side "needs", after its label (see ``needs``)."""


def needs(labels: list[str]) -> re.Pattern[str]:
    """:data:`NEEDS` after any of ``labels`` (the longest first: an edit may rename "Ben" to
    "Ben Jr")."""
    names = "|".join(re.escape(x) for x in sorted(labels, key=len, reverse=True))
    return re.compile(rf"(?<!\w)({names})" + NEEDS)


@pytest.mark.timeout(300)
@settings(max_examples=300, deadline=None)
@given(walks())
def test_three_choice_and_threshold_words_say_only_what_can_happen(walk: Walk) -> None:
    """Issue 24: a choice that can still reach a runoff never "cannot win"; a runoff's pair is
    named only when certain; a threshold count never "leads by"; a threshold final says who
    prevails and with what share; "the ballots left" only when some are; what a side "needs"
    is exactly what clinches."""
    for m, s, t in told(walk):
        count = t.count
        ids = count.choice_ids
        by_label = {c.label: c.id for c in count.choices}
        needs_re = needs(list(by_label))
        rule = count.rule
        text = prose(m)
        said = "\n".join([m.headline, *m.lines])
        finals = completions(count, s) if s.pending is not None and s.pending <= 6 else None
        if finals is not None and not m.final:
            outcomes = [arith.outcome(rule, ids, v) for v in finals]
            runoffs = [v for v, o in zip(finals, outcomes, strict=True) if o.kind.value == "runoff"]
            for c in m.choices:
                wins = any(o.winner == c.choice_id for o in outcomes)
                reaches = any(in_top_two(ids, v, c.choice_id) for v in runoffs)
                if c.note == "cannot win":
                    assert (wins, reaches) == (False, False), text
                if c.note == "could reach a runoff":
                    assert (wins, reaches) == (False, True), text
                if c.note == "out of the runoff":
                    assert (len(runoffs), reaches) == (len(finals), False), text
            if "A runoff is possible" in said:
                assert runoffs, text
            pair = re.search(r"A runoff between (.+) and (.+) is certain", said)
            if pair is not None:
                a, b = by_label[pair.group(1)], by_label[pair.group(2)]
                assert len(runoffs) == len(finals), text
                for v in runoffs:
                    assert all(v[r] < min(v[a], v[b]) for r in ids if r not in (a, b)), text
            for match in needs_re.finditer(said):
                who = by_label[match.group(1)]
                need = int((match.group(2) or match.group(4) or "1").replace(",", ""))
                assert need == arith.votes_to_clinch(rule, ids, s.votes, s.pending, who), text
        if "ballots left" in said or "the ballots left" in said:
            assert s.pending, text
        if rule.kind is RuleKind.THRESHOLD:
            assert "leads by" not in text, text
            assert "no other choice" not in text, text
        if m.final and rule.kind is RuleKind.THRESHOLD and s.decided is not None and s.valid:
            winner = s.decided.winner
            assert rule.threshold is not None
            if winner is not None and s.votes[winner] >= rule.threshold * s.valid:
                assert f"reaching the {fraction_words(rule.threshold)} needed" in m.headline
            elif winner is not None and len(ids) > 2:
                assert f"{count.label(winner)} prevails" in m.headline, text
        if m.final and s.decided is not None and s.decided.kind.value == "tie":
            assert "a tie: tied" not in m.headline


@settings(max_examples=300, deadline=None)
@given(walks())
def test_what_changed_is_said_never_silent(walk: Walk) -> None:
    """Issue 24: a call withdrawn, an edit that changes a call, fewer ballots received and
    challenges resolved are said; a paused count says so; "Count resumed" only after a pause."""
    for m, _s, t in told(walk):
        text = prose(m)
        before = t.previous
        if t.accepted is None:  # a status
            if t.tally.state is TallyState.PAUSED:
                assert m.headline.startswith("Count paused: "), text
            continue
        events = set(m.events)
        if "call_withdrawn" in events:
            assert "no longer holds" in m.headline or "withdrawn" in m.headline, text
        if t.accepted.revised is not None:
            assert re.search(r"corrected|renamed|removed", m.headline), text
        was, now = (before.received if before else None), t.tally.received
        if was is not None and now is not None and now < was:
            said = f"Ballots received corrected from {fmt.n(was)} to {fmt.n(now)}."
            assert said in m.lines, text
        if before is not None and t.tally.challenged < before.challenged:
            assert "resolved: " in text, text
        if t.tally.sustained:
            assert "sustained (not counted)" in text, text
        if m.headline.startswith("Count resumed"):
            assert before is not None, text
            assert before.state is TallyState.PAUSED, text
