"""The formatter: from a count, a tally, its figures and its events to a worded ``Message``.

Wording follows wire-service practice: nobody "wins" before it is decided; everything is
"unofficial" until the final; challenged ballots that could change the result make it "too close
to call"; a final result stands subject to objections and certification. Numbers get thousands
separators, percentages one decimal. This module words; it computes nothing new: every figure
comes from ``bot.arithmetic``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from fractions import Fraction

from bot.arithmetic import Outcome, OutcomeKind, Standing, standing
from bot.detect import Accepted, Event, EventKind
from bot.message import ChoiceLine, Message, Moment, Significance, Timed
from bot.model import Count, RuleKind, Tally, TallyState
from bot.times import clock_time

BAR_WIDTH = 20
QUARTERS = {1: "A quarter", 2: "Half", 3: "Three quarters", 4: "All"}


def n(value: int) -> str:
    """``1100`` -> ``1,100``."""
    return f"{value:,}"


def pct(value: Fraction | None) -> str:
    """A share with one decimal, rounded half up: ``Fraction(1563, 3215)`` -> ``48.6%``."""
    if value is None:
        return "-"
    tenths = (value * 1000 * 2 + 1) // 2  # round half up, in tenths of a percent
    return f"{tenths // 10}.{tenths % 10}%"


def bar(value: Fraction | None, width: int = BAR_WIDTH) -> str:
    filled = 0 if value is None else int((value * width * 2 + 1) // 2)
    return "█" * filled + "░" * (width - filled)


def when(at: datetime) -> str:
    """A time in UTC, for texts that are not shown in a reader's zone (the chart's)."""
    return clock_time(at, UTC)


def for_update(count: Count, accepted: Accepted, previous_seq: int | None) -> Message:
    """The message for an accepted update."""
    return build(count, accepted.tally, accepted.standing, accepted.events, previous_seq)


def for_status(count: Count, tally: Tally) -> Message:
    """The message for ``status``: the current state, no events."""
    return build(count, tally, standing(count, tally), (), None)


def build(
    count: Count,
    tally: Tally,
    s: Standing,
    events: Sequence[Event],
    previous_seq: int | None,
) -> Message:
    top = events[0] if events else None
    significant = any(e.significant for e in events)
    final = tally.state is TallyState.FINAL
    winner = s.decided.winner if s.decided is not None else None
    return Message(
        count_id=count.id,
        title=count.title,
        seq=tally.seq,
        headline=headline(count, tally, s, top),
        choices=choice_lines(count, tally, s),
        lines=detail_lines(count, tally, s, events, previous_seq),
        footer=footer(tally),
        significance=Significance.SIGNIFICANT if significant else Significance.ROUTINE,
        events=tuple(e.kind.value for e in events),
        leader=s.leader,
        winner=winner,
        final=final,
    )


def standing_phrase(count: Count, s: Standing) -> str:
    """``No union leads by 637`` or ``Tied at 10`` or ``No votes counted yet``."""
    if s.valid == 0:
        return "No votes counted yet"
    if s.leader is None:
        if len(count.choices) == 2:
            return f"Tied at {n(_top_votes(s))} each"
        tied = [count.label(c) for c in s.ranking if _votes(s, c) == _top_votes(s)]
        return f"{_join(tied)} tied at {n(_top_votes(s))}"
    return f"{count.label(s.leader)} leads by {n(s.margin)}"


def called_phrase(count: Count, s: Standing, outcome: Outcome) -> str:
    """How to say a call, exactly as strong as it is."""
    rule = count.rule
    if outcome.kind is OutcomeKind.RUNOFF:
        return "A runoff is certain: no choice can reach a majority"
    if outcome.kind is OutcomeKind.NO_DECISION:
        return f"No choice can reach {_threshold(count)} of the valid votes"
    if outcome.kind is OutcomeKind.TIE:
        return f"The count ends in a tie at {n(_top_votes(s))}"
    assert outcome.winner is not None
    who = count.label(outcome.winner)
    if rule.kind is RuleKind.MAJORITY:
        if s.most_valid is not None and 2 * _votes(s, outcome.winner) > s.most_valid:
            return f"{who} has clinched a majority"
        others = _join([c.label for c in count.choices if c.id != outcome.winner])
        return f"{who} has clinched the result: {others} can no longer win a majority"
    if rule.kind is RuleKind.PLURALITY:
        return f"{who} has clinched the most votes"
    if s.most_valid and _reaches_threshold(count, s, outcome.winner):
        return f"{who} has clinched {_threshold(count)} of the valid votes"
    return f"{who} has clinched the result: no other choice can reach {_threshold(count)}"


def headline(count: Count, tally: Tally, s: Standing, top: Event | None) -> str:
    kind = top.kind if top is not None else None
    if kind is EventKind.FINAL:
        return "Final tally: " + final_phrase(count, s)
    if kind is EventKind.CALL_WITHDRAWN:
        return f"Call withdrawn: the result is no longer certain. {standing_phrase(count, s)}"
    if kind is EventKind.CLINCHED and s.decided is not None:
        return called_phrase(count, s, s.decided) + " (unofficial)"
    if kind is EventKind.DETERMINATIVE:
        return too_close(tally)
    if kind is EventKind.NOT_DETERMINATIVE:
        return (
            f"The {n(tally.challenged)} challenged ballots cannot change the result: "
            f"{standing_phrase(count, s)}"
        )
    prefix = (
        {
            EventKind.CORRECTION: "Correction: ",
            EventKind.LEAD_CHANGE: "Lead change: ",
            EventKind.FIRST_RESULTS: "First results: ",
            EventKind.PAUSED: "Count paused: ",
            EventKind.RESUMED: "Count resumed: ",
        }.get(kind, "")
        if kind is not None
        else ""
    )
    if kind is EventKind.MILESTONE and top is not None and top.quarter is not None:
        prefix = f"{QUARTERS[top.quarter]} of the ballots counted: "
    return prefix + standing_phrase(count, s)


def final_phrase(count: Count, s: Standing) -> str:
    if s.decided is None:
        if s.determinative:
            return too_close_phrase(s.pending or 0)
        return standing_phrase(count, s)
    if s.decided.kind is OutcomeKind.WIN and s.decided.winner is not None:
        w = s.decided.winner
        rest = [c for c in s.ranking if c != w]
        if len(count.choices) == 2:
            return f"{count.label(w)} wins, {n(_votes(s, w))} to {n(_votes(s, rest[0]))}"
        return f"{count.label(w)} wins with {n(_votes(s, w))} votes ({pct(s.shares[w])})"
    if s.decided.kind is OutcomeKind.RUNOFF:
        a, b = s.ranking[0], s.ranking[1]
        return f"no majority; a runoff between {count.label(a)} and {count.label(b)}"
    return called_phrase(count, s, s.decided)


def too_close_phrase(challenged: int) -> str:
    return f"too close to call: {n(challenged)} challenged ballots could change the result"


def too_close(tally: Tally) -> str:
    text = too_close_phrase(tally.challenged)
    return text[0].upper() + text[1:]


def choice_lines(count: Count, tally: Tally, s: Standing) -> tuple[ChoiceLine, ...]:
    lines = []
    winner = s.decided.winner if s.decided is not None else None
    for position, choice in enumerate(count.choices):
        share = s.shares[choice.id]
        need = s.needs[choice.id]
        runoff = s.decided is not None and s.decided.kind is OutcomeKind.RUNOFF
        if winner == choice.id:
            note = "clinched" if tally.state is not TallyState.FINAL else "winner"
        elif runoff and tally.state is TallyState.FINAL and choice.id in s.ranking[:2]:
            note = "to the runoff"
        elif runoff:
            note = "no majority possible"
        elif s.decided is not None or choice.id not in s.contenders:
            note = "cannot win"
        elif need is not None:
            note = f"needs {n(need)} more to clinch"
        else:
            note = ""
        lines.append(
            ChoiceLine(
                choice_id=choice.id,
                label=choice.label,
                votes=tally.votes[choice.id],
                votes_text=n(tally.votes[choice.id]),
                share_text=pct(share),
                share=float(share) if share is not None else 0.0,
                bar=bar(share),
                note=note,
                leading=s.leader == choice.id,
                winner=winner == choice.id,
                position=position,
            )
        )
    return tuple(lines)


def detail_lines(
    count: Count,
    tally: Tally,
    s: Standing,
    events: Sequence[Event],
    previous_seq: int | None,
) -> tuple[str, ...]:
    out: list[str] = []
    kinds = {e.kind for e in events}
    if EventKind.CORRECTION in kinds and previous_seq is not None:
        out.append(f"Correction: these figures replace update #{previous_seq}.")
    out.append(standing_phrase(count, s) + ".")
    out.append(progress_line(tally, s))
    if s.received is None and tally.state is not TallyState.FINAL:
        out.append("Ballots received not known: no result can be called before the final.")
    elif s.decided is not None and tally.state is not TallyState.FINAL:
        out.append(called_phrase(count, s, s.decided) + "; the ballots left cannot change it.")
    elif s.decided is None:
        out.extend(race_lines(count, s))
    if s.determinative and EventKind.DETERMINATIVE not in kinds:
        out.append(too_close(tally) + ".")
    elif s.determinative is False and tally.challenged and s.outstanding == 0:
        out.append(f"The {n(tally.challenged)} challenged ballots cannot change the result.")
    if s.outstanding == 0 and s.switches_to_flip is not None and s.valid:
        out.append(
            f"It would take {n(s.switches_to_flip)} ballots switching sides to change the result."
        )
    if s.turnout is not None and count.eligible:
        out.append(f"Turnout: {pct(s.turnout)} of {n(count.eligible)} eligible voters.")
    if tally.state is TallyState.FINAL:
        out.append("Results stand subject to objections and certification.")
    return tuple(out)


def progress_line(tally: Tally, s: Standing) -> str:
    parts: list[str] = []
    if s.received is not None:
        parts.append(f"{n(s.counted)} of {n(s.received)} ballots counted ({pct(s.progress)})")
    else:
        parts.append(f"{n(s.counted)} ballots counted")
    if s.outstanding:
        parts.append(f"{n(s.outstanding)} not yet opened")
    if tally.challenged:
        parts.append(f"{n(tally.challenged)} challenged")
    if tally.void:
        parts.append(f"{n(tally.void)} void")
    return "; ".join(parts) + "."


def race_lines(count: Count, s: Standing) -> list[str]:
    """What it takes to win from here, when nothing is decided yet."""
    out: list[str] = []
    targets = {c: t for c, t in s.targets.items() if t is not None}
    if targets:
        distinct = set(targets.values())
        if len(distinct) == 1 and len(targets) == len(count.choices):
            out.append(f"A side needs {n(distinct.pop())} to clinch.")
        else:
            out.append(
                "To clinch: "
                + "; ".join(f"{count.label(c)} {n(t)}" for c, t in targets.items())
                + "."
            )
    if len(count.choices) > 2:
        still = [count.label(c) for c in s.contenders]
        out.append(f"Still able to win: {_join(still) if still else 'none'}.")
    return out


def footer(tally: Tally) -> Timed:
    status = "Final tally" if tally.state is TallyState.FINAL else "Unofficial results"
    return Timed.of(
        f"{status} · source: {tally.source}",
        Moment(tally.observed_at, lead=" · as of "),
        f" · update #{tally.seq}",
    )


def _votes(s: Standing, choice: str) -> int:
    return s.votes[choice]


def _top_votes(s: Standing) -> int:
    return s.votes[s.ranking[0]]


def _threshold(count: Count) -> str:
    t = count.rule.threshold
    assert t is not None
    return f"{t.numerator}/{t.denominator}"


def _reaches_threshold(count: Count, s: Standing, choice: str) -> bool:
    t = count.rule.threshold
    assert t is not None
    assert s.most_valid is not None
    return t.denominator * _votes(s, choice) >= t.numerator * s.most_valid


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
