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
from dataclasses import replace
from datetime import datetime
from fractions import Fraction

from bot.domain import corrections, race_text
from bot.domain.arithmetic import OutcomeKind, Standing, margin_points, runoff_hopefuls, standing
from bot.domain.corrections import CORRECTED_FINAL
from bot.domain.detect import Accepted, Event, EventKind
from bot.domain.message import ChoiceLine, Message, Moment, Significance, Timed
from bot.domain.model import Count, RuleKind, Tally, TallyState
from bot.domain.phrases import (
    call_noun,
    called_phrase,
    challenged_settled,
    final_phrase,
    join,
    pct,
    runoff_note,
    runoff_summary,
    standing_phrase,
    tie_phrase,
    too_close,
)
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
]

BAR_WIDTH = 20
QUARTERS = {1: "A quarter", 2: "Half", 3: "Three quarters", 4: "All"}
FINAL_NEWS = frozenset({EventKind.FINAL, EventKind.CORRECTION})
"""Events that make a final tally's headline the final result (a status says it too)."""


def bar(value: Fraction | None, width: int = BAR_WIDTH) -> str:
    filled = 0 if value is None else int((value * width * 2 + 1) // 2)
    return "█" * filled + "░" * (width - filled)


def for_update(
    count: Count, accepted: Accepted, previous_seq: int | None, previous: Tally | None = None
) -> Message:
    """The message for an accepted update (``previous``: the update before it, for the pace;
    a correction says what it corrected)."""
    message = build(
        count,
        accepted.tally,
        accepted.standing,
        accepted.events,
        previous_seq,
        before=accepted.previous,
        previous=previous,
    )
    return corrections.revised(message, count, accepted)


def for_status(
    count: Count, tally: Tally, now: datetime | None = None, previous: Tally | None = None
) -> Message:
    """The message for ``status``: the current state, no events (``now``: to say how long a
    paused count has been paused; ``previous``: the update before, for the pace)."""
    message = build(count, tally, standing(count, tally), (), None, previous=previous)
    paused = race_text.paused_note(tally, now)
    return replace(message, notes=(paused, *message.notes)) if paused is not None else message


def build(
    count: Count,
    tally: Tally,
    s: Standing,
    events: Sequence[Event],
    previous_seq: int | None,
    *,
    before: Standing | None = None,
    previous: Tally | None = None,
) -> Message:
    """The message for ``tally``; ``before``: the figures of the update before it (what changed:
    the batch of votes, a tie broken); ``previous``: that update (the pace of counting)."""
    significant = any(e.significant for e in events)
    final = tally.state is TallyState.FINAL
    winner = s.decided.winner if s.decided is not None else None
    story: tuple[str, ...] = ()
    if tally.state is not TallyState.FINAL and s.decided is None and (significant or not events):
        story = race_story(count, tally, s, events, before, previous_seq)
        if previous is not None:
            pace = race_text.pace_line(count, previous, tally, s)
            story += (pace,) if pace is not None else ()
    return Message(
        count_id=count.id,
        title=count.title,
        seq=tally.seq,
        headline=headline(count, tally, s, events, before),
        choices=choice_lines(count, tally, s),
        lines=detail_lines(count, tally, s, events, previous_seq, story),
        footer=footer(tally),
        significance=Significance.SIGNIFICANT if significant else Significance.ROUTINE,
        events=tuple(e.kind.value for e in events),
        leader=s.leader,
        winner=winner,
        final=final,
    )


def headline(
    count: Count,
    tally: Tally,
    s: Standing,
    events: Sequence[Event],
    before: Standing | None = None,
) -> str:
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
        result = runoff_summary(count, s) if s.runoff is not None else continued(count, s)
        return f"{challenged_settled(tally, s)}: {result}"
    if EventKind.FIRST_RESULTS in kinds:  # a tie among the first results is still the first
        return "First results: " + continued(count, s)
    if kind is EventKind.LEAD_CHANGE and before is not None and before.leader is None:
        return "Tie broken: " + continued(count, s)  # nobody led: no lead changed hands
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
    return prefix + (continued(count, s) if prefix else standing_phrase(count, s))


def continued(count: Count, s: Standing) -> str:
    """The standing after a colon: ``First results: tied at 5 each``."""
    if s.valid and s.leader is None:
        return tie_phrase(count, s)
    return standing_phrase(count, s)


def choice_lines(count: Count, tally: Tally, s: Standing) -> tuple[ChoiceLine, ...]:
    lines = []
    winner = s.decided.winner if s.decided is not None else None
    runoff = s.decided is not None and s.decided.kind is OutcomeKind.RUNOFF
    hopefuls = (
        ()
        if s.decided is not None
        else runoff_hopefuls(count.rule, count.choice_ids, s.votes, s.pending)
    )
    for position, choice in enumerate(count.choices):
        share = s.shares[choice.id]
        need = s.needs[choice.id]
        if winner == choice.id:
            note = "clinched" if tally.state is not TallyState.FINAL else "winner"
        elif runoff:
            note = runoff_note(s, choice.id) or "out of the runoff"
        elif s.decided is None and choice.id not in s.contenders and choice.id in hopefuls:
            note = "could reach a runoff"
        elif not s.valid and not s.pending and tally.state is not TallyState.FINAL:
            note = ""  # nothing counted and nothing to count: nothing called, for or against
        elif s.decided is not None or choice.id not in s.contenders:
            note = "cannot win"
        elif need:
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
    story: Sequence[str] = (),
) -> tuple[str, ...]:
    """The sentences under the figures; ``story``: the race from here, after what it takes."""
    out: list[str] = []
    kinds = {e.kind for e in events}
    if EventKind.CORRECTION in kinds and previous_seq is not None:
        out.append(f"Correction: these figures replace update #{previous_seq}.")
    out.append(standing_line(count, tally, s))
    out.append(progress_line(tally, s))
    if s.received is None and tally.state is not TallyState.FINAL:
        out.append("Ballots received not known: no result can be called before the final.")
    elif s.decided is not None and tally.state is not TallyState.FINAL:
        out.append(called_phrase(count, s, s.decided) + called_tail(s) + ".")
    elif s.decided is None:
        out.extend(race_lines(count, s))
    out.extend(story)
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


def standing_line(count: Count, tally: Tally, s: Standing) -> str:
    """The standing as a sentence, the margin in points too: ``No union leads by 637 votes
    (40.8 points).``, and at a final that it decided ``No union won by 1,060 votes (41.8
    points).``"""
    if s.valid == 0 and tally.state is TallyState.FINAL:
        return "No valid votes."
    if s.leader is None or count.rule.kind is RuleKind.THRESHOLD:
        return standing_phrase(count, s) + "."
    points = pct(margin_points(count.choice_ids, s.votes)).removesuffix("%")
    decided = s.decided if tally.state is TallyState.FINAL else None
    verb = "won by" if decided is not None and decided.winner == s.leader else "leads by"
    lead = f"{count.label(s.leader)} {verb} {count_of(s.margin, 'vote')}"
    return f"{lead} ({points} points)."


def called_tail(s: Standing) -> str:
    """What the ballots left can still do to a call made before the final."""
    if not s.pending:
        return "; every ballot received has been counted"
    if s.runoff is not None and s.runoff.open:
        return ""  # the call itself says which place is open
    if s.runoff is not None:
        return "; the ballots left cannot change who is in it"
    return "; the ballots left cannot change it"


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
    if not s.pending:  # nothing left that could decide it (no valid votes either)
        return out
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
        runoffs = count.rule.kind is RuleKind.MAJORITY
        win = "win a majority" if runoffs else "win"
        out.append(f"Still able to {win}: {join(still) if still else 'none'}.")
        if runoffs:
            hopefuls = runoff_hopefuls(count.rule, count.choice_ids, s.votes, s.pending)
            hopes = race_text.runoff_hopes_line(count, hopefuls)
            if hopes is not None:
                out.append(hopes)
    return out


def race_story(
    count: Count,
    tally: Tally,
    s: Standing,
    events: Sequence[Event],
    before: Standing | None,
    previous_seq: int | None,
) -> tuple[str, ...]:
    """The figures organisers ask for while the race is open: in ``status`` and in significant
    posts (see :mod:`bot.domain.race_text`)."""
    out: list[str] = []
    kinds = {e.kind for e in events}
    if before is not None and EventKind.CORRECTION not in kinds:
        line = race_text.batch_line(count, before, s, previous_seq)
        if line is not None:
            out.append(line)
    if s.received is not None:
        out.extend(race_text.needs_lines(count, tally, s))
        level = race_text.draw_level_line(count, s)
        if level is not None:
            out.append(level)
    if not events or kinds & {EventKind.FIRST_RESULTS, EventKind.TIE}:
        rule = race_text.tie_rule(count)
        if rule is not None:
            out.append(rule)
    return tuple(out)


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
