"""The race from here, in words: the figures organisers and reporters ask of an open count.

What the trailing side needs as a share of the ballots left, what the last batch did, what it
takes to draw level, how ties are settled, and how long the count has been paused. Each sentence
says only what is certain, is singular with 1, separates thousands and never says more than
100%. The figures are :mod:`bot.domain.arithmetic.race`'s; :mod:`bot.domain.format` decides
which messages carry them (``status`` and significant posts while the race is open).
"""

from __future__ import annotations

from datetime import datetime

from bot.domain.arithmetic import (
    Standing,
    about,
    batch,
    counted,
    draw_level,
    needed_share,
    pace,
    paused_for,
)
from bot.domain.message import Moment, Timed
from bot.domain.model import Count, RuleKind, Tally, TallyState
from bot.domain.phrases import join, pct, threshold_words
from bot.domain.words import count_of, duration_words, n


def needs_lines(count: Count, tally: Tally, s: Standing) -> list[str]:
    """What each trailing side that can still clinch needs of the ballots left, as a share.

    ``Yes needs 1,145 of the 1,652 ballots still to be counted or resolved (69.3%) to clinch;
    it has 29.6% so far.`` With challenged ballots, the same of the unopened alone."""
    pending = s.pending
    if not pending:
        return []
    out = []
    left = "counted or resolved" if tally.challenged else "counted"
    for c in s.contenders:
        need = s.needs[c]
        if c == s.leader or not need:
            continue
        if need < pending:
            of = f"{n(need)} of the {count_of(pending, 'ballot')} still to be {left}"
            of += f" ({pct(needed_share(need, pending))})"
        else:  # every one of them: no share to give
            of = f"{_all(pending)} still to be {left}"
        sentence = f"{count.label(c)} needs {of} to clinch"
        if s.valid:
            sentence += f"; it has {pct(s.shares[c])} so far"
        out.append(sentence + ".")
        unopened = s.outstanding or 0
        if tally.challenged and unopened:
            aside = f"With the {count_of(tally.challenged, 'challenged ballot')} set aside"
            if need < unopened:
                share = pct(needed_share(need, unopened))
                out.append(f"{aside}, that is {n(need)} of the {n(unopened)} unopened ({share}).")
            elif need == unopened:
                out.append(f"{aside}, that is {_all(unopened)} unopened.")
            else:
                out.append(f"{aside}, it cannot clinch from the {n(unopened)} unopened alone.")
    return out


def _all(ballots: int) -> str:
    """``the 1 ballot`` or ``all 1,652 ballots``."""
    return "the 1 ballot" if ballots == 1 else f"all {count_of(ballots, 'ballot')}"


def batch_line(count: Count, before: Standing, s: Standing, previous_seq: int | None) -> str | None:
    """``This batch, since update #3: 121 votes; No union 62.0%, Yes (RWDSU) 38.0%.``"""
    new = batch(count.choice_ids, before.votes, s.votes)
    if new is None:
        return None
    since = f", since update #{previous_seq}" if previous_seq is not None else ""
    votes = count_of(new.total, "vote")
    top = new.order[0]
    if new.votes[top] == new.total:
        return f"This batch{since}: {votes}, all for {count.label(top)}."
    each = ", ".join(f"{count.label(c)} {pct(new.shares[c])}" for c in new.order)
    return f"This batch{since}: {votes}; {each}."


def draw_level_line(count: Count, s: Standing) -> str | None:
    """``To draw level, Yes needs 637 more votes than No of the 1,652 ballots left.``"""
    if s.pending is None or not s.pending or count.rule.kind is RuleKind.THRESHOLD:
        return None
    level = draw_level(count.choice_ids, s.votes, s.pending)
    if level is None or not level.possible:
        return None
    more = count_of(level.gap, "more vote")
    chaser, leader = count.label(level.chaser), count.label(level.leader)
    return (
        f"To draw level, {chaser} needs {more} than {leader} of the "
        f"{count_of(s.pending, 'ballot')} left."
    )


def pace_line(count: Count, before: Tally, tally: Tally, s: Standing) -> str | None:
    """``Counting at about 400 ballots an hour since update #5.``, for a count that asks for it
    (``pace=yes``); nothing across a pause, or when nothing was counted."""
    if not count.pace or before.state is TallyState.PAUSED:
        return None
    rate = pace(counted(before), before.observed_at, s.counted, tally.observed_at)
    if rate is None or rate == 0:
        return None
    roughly = about(rate)
    said = f"about {count_of(roughly, 'ballot')}" if roughly else "less than 1 ballot"
    return f"Counting at {said} an hour since update #{before.seq}."


def tie_rule(count: Count) -> str | None:
    """How the count is settled when nobody meets the rule, said once: ``A tie goes to No.``"""
    rule = count.rule
    holder = count.label(rule.tie_holder) if rule.tie_holder is not None else None
    if rule.kind is RuleKind.MAJORITY and len(count.choices) > 2:
        return "Without a majority, the top two go to a runoff."
    if holder is None:
        return None
    if rule.kind is RuleKind.THRESHOLD:
        return f"If no choice reaches {threshold_words(count)}, {holder} prevails."
    if rule.kind is RuleKind.PLURALITY:
        return f"A tie for the most votes goes to {holder}."
    return f"A tie goes to {holder}."


def runoff_hopes_line(count: Count, hopefuls: tuple[str, ...]) -> str | None:
    """``A runoff is possible, between two of A, B and C.``"""
    if not hopefuls:
        return None
    labels = [count.label(c) for c in hopefuls]
    if len(labels) == 2:
        return f"A runoff is possible, between {join(labels)}."
    return f"A runoff is possible, between two of {join(labels)}."


def paused_note(tally: Tally, now: datetime | None) -> Timed | None:
    """``Paused for 9 hours 10 minutes, since 8 Apr 2021 23:00.`` for a paused count."""
    if tally.state is not TallyState.PAUSED:
        return None
    since = Moment(tally.observed_at, lead=" since ")
    if now is None:
        return Timed.of("Count paused", since, ".")
    return Timed.of(
        f"Count paused for {duration_words(paused_for(tally.observed_at, now))},", since, "."
    )
