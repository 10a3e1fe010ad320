"""The words of a correction: what an edit of a count's settings or a corrected tally changed,
and of challenged ballots resolved.

A correction says from what to what: "Rule corrected to three-quarters", "Ballots received
corrected from 1,500 to 1,300", "No union corrected from 1,100 to 1,090". An edit that changes a
published call, runoff, determinative state or final result (``Accepted.revised``) is headlined
with what it corrected and what that does to the call::

    Rule corrected to three-quarters: the earlier call for Ratify no longer holds; Reject
    has clinched the result: no other choice can reach three-quarters (unofficial)

Challenged ballots that leave the challenged pile are explained, never silent: those opened
(the challenge overruled) went into the counted figures, those sustained (the challenge upheld,
the NLRB's term) are not counted. :func:`revised` applies all of it to the formatter's message;
the phrases are :mod:`bot.domain.phrases`' and every figure comes from the standings.
"""

from __future__ import annotations

from dataclasses import replace

from bot.domain.arithmetic import Outcome, Standing
from bot.domain.detect import Accepted, EventKind
from bot.domain.message import Message
from bot.domain.model import Count, DecisionRule, RuleKind, TallyState
from bot.domain.phrases import (
    call_noun,
    called_phrase,
    final_phrase,
    standing_phrase,
    too_close_phrase,
    upper_first,
)
from bot.domain.words import count_of, fraction_words, n

CORRECTED_FINAL = "Corrected final tally: "
"""How the headline of a final that corrects a final begins (the formatter's and the
chart's too)."""

RULE_WORDS = {RuleKind.MAJORITY: "a majority", RuleKind.PLURALITY: "the most votes"}


def rule_words(rule: DecisionRule) -> str:
    """``a majority``, ``the most votes``, ``three-quarters``.

    >>> from fractions import Fraction
    >>> rule_words(DecisionRule(RuleKind.THRESHOLD, threshold=Fraction(3, 4)))
    'three-quarters'
    """
    if rule.kind is RuleKind.THRESHOLD and rule.threshold is not None:
        return fraction_words(rule.threshold)
    return RULE_WORDS[rule.kind]


def settings_changed(was: Count, count: Count) -> list[str]:
    """What an edit changed of what the figures mean, in words, lowercase first.

    >>> from bot.domain.model import Choice
    >>> a = Count("x", "X", (Choice("yes", "Yes"), Choice("no", "No")),
    ...           DecisionRule(RuleKind.MAJORITY, tie_holder="no"), received=900)
    >>> settings_changed(a, replace(a, rule=DecisionRule(RuleKind.MAJORITY, "yes"),
    ...                             received=1000))
    ['tie holder corrected to Yes', 'ballots received corrected from 900 to 1,000']
    """
    out: list[str] = []
    old, new = was.rule, count.rule
    if (old.kind, old.threshold) != (new.kind, new.threshold):
        out.append(f"rule corrected to {rule_words(new)}")
    if old.tie_holder != new.tie_holder:
        holder = new.tie_holder
        out.append(
            f"tie holder corrected to {count.label(holder)}" if holder else "tie holder removed"
        )
    if was.received != count.received and count.received is not None:
        out.append(_from_to("ballots received", was.received, count.received))
    if was.eligible != count.eligible and count.eligible is not None:
        out.append(_from_to("eligible voters", was.eligible, count.eligible))
    for before, after in zip(was.choices, count.choices, strict=True):
        if before.label != after.label:
            out.append(f"{before.label} renamed {after.label}")
    return out


def figures_lowered(count: Count, before: Standing, after: Standing) -> list[str]:
    """The figures a corrected tally lowered (a correction says from what to what).

    >>> from datetime import datetime, UTC
    >>> from bot.domain.arithmetic import standing
    >>> from bot.domain.model import Choice, Tally
    >>> c = Count("x", "X", (Choice("yes", "Yes"), Choice("no", "No")),
    ...           DecisionRule(RuleKind.MAJORITY))
    >>> at = datetime(2021, 4, 8, tzinfo=UTC)
    >>> s = standing(c, Tally("x", {"yes": 310, "no": 520}, at, "admin", received=1500))
    >>> t = standing(c, Tally("x", {"yes": 600, "no": 700}, at, "admin", received=1300))
    >>> figures_lowered(c, s, t)
    ['ballots received corrected from 1,500 to 1,300']
    """
    out = [
        _from_to(choice.label, before.votes[choice.id], after.votes[choice.id])
        for choice in count.choices
        if after.votes[choice.id] < before.votes[choice.id]
    ]
    void_before, void_after = before.counted - before.valid, after.counted - after.valid
    for name, was, now in (
        ("void", void_before, void_after),
        ("challenged", before.challenged, after.challenged),
        ("challenges sustained", before.sustained, after.sustained),
        ("ballots received", before.received, after.received),
    ):
        if was is not None and now is not None and now < was:
            out.append(_from_to(name, was, now))
    return out


def challenges_resolved(before: Standing, after: Standing) -> str | None:
    """What became of the challenged ballots that left the pile, or None when none did.

    >>> from datetime import datetime, UTC
    >>> from bot.domain.arithmetic import standing
    >>> from bot.domain.model import Choice, Tally
    >>> c = Count("x", "X", (Choice("yes", "Yes"), Choice("no", "No")),
    ...           DecisionRule(RuleKind.MAJORITY), received=100)
    >>> at = datetime(2021, 4, 8, tzinfo=UTC)
    >>> s = standing(c, Tally("x", {"yes": 40, "no": 40}, at, "admin", challenged=20))
    >>> t = standing(c, Tally("x", {"yes": 45, "no": 47}, at, "admin", challenged=5,
    ...                       sustained=3))
    >>> challenges_resolved(s, t)
    '15 challenged ballots resolved: 12 opened and counted; 3 challenges sustained (not counted).'
    """
    resolved = before.challenged - after.challenged
    if resolved <= 0:
        return None
    sustained = min(max(after.sustained - before.sustained, 0), resolved)
    opened = resolved - sustained
    parts = []
    if opened:
        parts.append(f"{n(opened)} opened and counted")
    if sustained:
        parts.append(f"{count_of(sustained, 'challenge')} sustained (not counted)")
    return f"{count_of(resolved, 'challenged ballot')} resolved: {'; '.join(parts)}."


def revised(message: Message, count: Count, accepted: Accepted) -> Message:
    """``message`` with what a correction changed said: the headline of an edit that changed
    the call, and under the first line the figures it corrected and the challenges resolved."""
    before, after = accepted.previous, accepted.standing
    if before is None:
        return message
    said: list[str] = []
    was = accepted.revised
    corrected = accepted.has(EventKind.CORRECTION)
    what = settings_changed(was, count) if was is not None else []
    if corrected:
        what += [w for w in figures_lowered(count, before, after) if w not in what]
    said += [upper_first(w) + "." for w in what]
    resolved = challenges_resolved(before, after)
    if resolved is not None:
        said.append(resolved)
    headline = message.headline
    b, a = before.received, after.received
    fewer = b is not None and a is not None and a < b
    if was is not None and what:
        headline = _headline(was, count, accepted, what)
    elif corrected and fewer and accepted.tally.state is not TallyState.FINAL:
        headline = _headline(count, count, accepted, what)
    if not said and headline == message.headline:
        return message
    lines = (*message.lines[:1], *said, *message.lines[1:])
    return replace(message, headline=headline, lines=lines)


def _headline(was: Count, count: Count, accepted: Accepted, what: list[str]) -> str:
    s = accepted.standing
    withdrawn: Outcome | None = next(
        (e.outcome for e in accepted.events if e.kind is EventKind.CALL_WITHDRAWN), None
    )
    earlier = f"the earlier call {call_noun(was, withdrawn)}" if withdrawn is not None else ""
    changed = "; ".join(what)
    if accepted.tally.state is TallyState.FINAL:
        parts = [f"{CORRECTED_FINAL}{changed}"]
        if earlier:
            parts.append(f"{earlier} is withdrawn")
        return "; ".join([*parts, final_phrase(count, s)])
    parts = [f"{earlier} no longer holds"] if earlier else []
    if s.decided is not None:
        parts.append(called_phrase(count, s, s.decided) + " (unofficial)")
    elif s.determinative:
        parts.append(too_close_phrase(s.challenged))
    else:
        parts.append(standing_phrase(count, s))
    return f"{upper_first(changed)}: {'; '.join(parts)}"


def _from_to(name: str, was: int | None, now: int) -> str:
    if was is None:
        return f"{name} set to {n(now)}"
    return f"{name} corrected from {n(was)} to {n(now)}"
