"""The formatter: from a count, a tally, its figures and its events to a worded ``Message``.

Wording follows wire-service practice: nobody "wins" before it is decided; everything is
"unofficial" until the final; challenged ballots that could change the result make it "too close
to call"; a final result stands subject to objections and certification. Numbers get thousands
separators, percentages one decimal, and nouns agree with their numbers. The phrases themselves
are in :mod:`bot.domain.phrases`; this module puts them together. It computes nothing new: every
figure comes from ``bot.domain.arithmetic``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from fractions import Fraction

from bot.domain import corrections
from bot.domain.arithmetic import OutcomeKind, Standing, standing
from bot.domain.corrections import CORRECTED_FINAL
from bot.domain.detect import Accepted, Event, EventKind
from bot.domain.message import ChoiceLine, Message, Moment, Significance, Timed
from bot.domain.model import Count, Tally, TallyState
from bot.domain.phrases import (
    call_noun,
    called_phrase,
    challenged_settled,
    final_phrase,
    join,
    pct,
    runoff_note,
    standing_phrase,
    too_close,
)
from bot.domain.times import clock_time
from bot.domain.words import count_of, n

__all__ = [
    "bar",
    "build",
    "called_phrase",
    "final_phrase",
    "for_status",
    "for_update",
    "n",
    "pct",
    "progress_line",
    "standing_phrase",
    "when",
]

BAR_WIDTH = 20
QUARTERS = {1: "A quarter", 2: "Half", 3: "Three quarters", 4: "All"}
FINAL_NEWS = frozenset({EventKind.FINAL, EventKind.CORRECTION})
"""Events that make a final tally's headline the final result (a status says it too)."""


def bar(value: Fraction | None, width: int = BAR_WIDTH) -> str:
    filled = 0 if value is None else int((value * width * 2 + 1) // 2)
    return "█" * filled + "░" * (width - filled)


def when(at: datetime) -> str:
    """A time in UTC, for texts that are not shown in a reader's zone (the chart's)."""
    return clock_time(at, UTC)


def for_update(count: Count, accepted: Accepted, previous_seq: int | None) -> Message:
    """The message for an accepted update (a correction saying what it corrected)."""
    message = build(count, accepted.tally, accepted.standing, accepted.events, previous_seq)
    return corrections.revised(message, count, accepted)


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
    significant = any(e.significant for e in events)
    final = tally.state is TallyState.FINAL
    winner = s.decided.winner if s.decided is not None else None
    return Message(
        count_id=count.id,
        title=count.title,
        seq=tally.seq,
        headline=headline(count, tally, s, events),
        choices=choice_lines(count, tally, s),
        lines=detail_lines(count, tally, s, events, previous_seq),
        footer=footer(tally),
        significance=Significance.SIGNIFICANT if significant else Significance.ROUTINE,
        events=tuple(e.kind.value for e in events),
        leader=s.leader,
        winner=winner,
        final=final,
    )


def headline(count: Count, tally: Tally, s: Standing, events: Sequence[Event]) -> str:
    top = events[0] if events else None
    kind = top.kind if top is not None else None
    kinds = {e.kind for e in events}
    withdrawn = next((e.outcome for e in events if e.kind is EventKind.CALL_WITHDRAWN), None)
    if tally.state is TallyState.FINAL and (not events or kinds & FINAL_NEWS):
        corrected = bool(events) and EventKind.FINAL not in kinds
        framing = CORRECTED_FINAL if corrected else "Final tally: "
        if withdrawn is not None:
            framing += f"the earlier call {call_noun(count, withdrawn)} is withdrawn; "
        return framing + final_phrase(count, s)
    if kind is EventKind.CALL_WITHDRAWN:
        assert withdrawn is not None
        if s.decided is not None:
            return (
                f"Call withdrawn: the earlier call {call_noun(count, withdrawn)} no longer holds. "
                f"{called_phrase(count, s, s.decided)} (unofficial)"
            )
        return f"Call withdrawn: the result is no longer certain. {standing_phrase(count, s)}"
    if kind is EventKind.CLINCHED and s.decided is not None:
        return called_phrase(count, s, s.decided) + " (unofficial)"
    if kind is EventKind.DETERMINATIVE:
        return too_close(tally)
    if kind is EventKind.NOT_DETERMINATIVE:
        return f"{challenged_settled(tally, s)}: {standing_phrase(count, s)}"
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
    if kind is None and tally.state is TallyState.PAUSED:
        prefix = "Count paused: "  # a status of a paused count says so
    return prefix + standing_phrase(count, s)


def choice_lines(count: Count, tally: Tally, s: Standing) -> tuple[ChoiceLine, ...]:
    lines = []
    winner = s.decided.winner if s.decided is not None else None
    for position, choice in enumerate(count.choices):
        share = s.shares[choice.id]
        need = s.needs[choice.id]
        runoff = s.decided is not None and s.decided.kind is OutcomeKind.RUNOFF
        if winner == choice.id:
            note = "clinched" if tally.state is not TallyState.FINAL else "winner"
        elif runoff and tally.state is TallyState.FINAL and runoff_note(s, choice.id):
            note = runoff_note(s, choice.id)
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
        out.append(challenged_settled(tally, s) + ".")
    if s.outstanding == 0 and s.switches_to_flip is not None and s.valid:
        switching = count_of(s.switches_to_flip, "ballot")
        out.append(f"It would take {switching} switching sides to change the result.")
    if s.turnout is not None and count.eligible:
        out.append(f"Turnout: {pct(s.turnout)} of {count_of(count.eligible, 'eligible voter')}.")
    if tally.state is TallyState.FINAL:
        out.append("Results stand subject to objections and certification.")
    return tuple(out)


def progress_line(tally: Tally, s: Standing) -> str:
    parts: list[str] = []
    if s.received is not None:
        of = count_of(s.received, "ballot")
        parts.append(f"{n(s.counted)} of {of} counted ({pct(s.progress)})")
    else:
        parts.append(f"{count_of(s.counted, 'ballot')} counted")
    if s.outstanding:
        parts.append(f"{n(s.outstanding)} not yet opened")
    if tally.challenged:
        parts.append(f"{n(tally.challenged)} challenged")
    if tally.void:
        parts.append(f"{n(tally.void)} void")
    if tally.sustained:
        parts.append(f"{count_of(tally.sustained, 'challenge')} sustained (not counted)")
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
        out.append(f"Still able to win: {join(still) if still else 'none'}.")
    return out


def footer(tally: Tally) -> Timed:
    status = "Final tally" if tally.state is TallyState.FINAL else "Unofficial results"
    return Timed.of(
        f"{status} · source: {tally.source}",
        Moment(tally.observed_at, lead=" · as of "),
        f" · update #{tally.seq}",
    )


# The chart's words (its subtitle and its alt text): the figure itself is bot.domain.chart_figure.


def chart_description(count: Count, history: Sequence[Tally]) -> str:
    """What the chart shows, in words (the image's alt text)."""
    last = history[-1]
    s = standing(count, last)
    names = ", ".join(c.label for c in count.choices)
    subtitle = chart_subtitle(count, last, s, corrects_a_final(history))
    return (
        f"Chart of {count.title}: votes for {names} against ballots counted, "
        f"updates #{history[0].seq} to #{last.seq}. {subtitle}. "
        f"{progress_line(last, s)}"
    )


def corrects_a_final(history: Sequence[Tally]) -> bool:
    """Whether the last of ``history`` corrects a final result: as published (the headline it
    was posted with), or for one kept before headlines were, a final after a final."""
    last = history[-1]
    if last.state is not TallyState.FINAL:
        return False
    if last.headline:
        return last.headline.startswith(CORRECTED_FINAL)
    return any(t.state is TallyState.FINAL for t in history[:-1])


def chart_subtitle(count: Count, tally: Tally, s: Standing, corrected: bool = False) -> str:
    """The line under the title: "unofficial" until the final tally; ``corrected``: the final
    corrects a final (:func:`corrects_a_final`)."""
    if tally.state is TallyState.FINAL:
        return (CORRECTED_FINAL if corrected else "Final tally: ") + final_phrase(count, s)
    if s.decided is not None:
        return called_phrase(count, s, s.decided) + " (unofficial)"
    if tally.state is TallyState.PAUSED:
        return "Unofficial, count paused: " + standing_phrase(count, s)
    return "Unofficial: " + standing_phrase(count, s)
