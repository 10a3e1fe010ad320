"""The phrases of a message: how a standing, a call or a final result is said.

Wire-service practice: nobody "wins" before it is decided, and a call is said exactly as strong
as it is. Percentages have one decimal and never claim what the figures do not (``<0.1%`` for a
share above nothing, never ``100.0%`` short of all); nouns agree with their numbers; shares such
as 2/3 are said in words ("two-thirds"). Nothing is computed here: every figure comes from
``bot.domain.arithmetic``. :mod:`bot.domain.format` puts these phrases together into a ``Message``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from bot.domain.arithmetic import Outcome, OutcomeKind, Standing
from bot.domain.model import Count, RuleKind, Tally
from bot.domain.words import count_of, fraction_words, n


def pct(value: Fraction | None) -> str:
    """A share with one decimal, rounded half up: ``Fraction(1563, 3215)`` -> ``48.6%``.

    Rounding never claims what is not so: a share above nothing is at least ``<0.1%``, and a
    share short of everything is at most ``>99.9%``.
    """
    if value is None:
        return "-"
    tenths = (value * 1000 * 2 + 1) // 2  # round half up, in tenths of a percent
    if tenths == 0 and value > 0:
        return "<0.1%"
    if tenths >= 1000 and value < 1:
        return ">99.9%"
    return f"{tenths // 10}.{tenths % 10}%"


def standing_phrase(count: Count, s: Standing) -> str:
    """``No union leads by 637`` or ``Tied at 10`` or ``No votes counted yet``.

    Under a threshold a lead is not what decides: the leader's share and the share needed are
    said instead (``Ratify has 64.2% of the valid votes (two-thirds needed)``)."""
    if s.valid == 0:
        return "No votes counted yet"
    if s.leader is None:
        return upper_first(tie_phrase(count, s))
    if count.rule.kind is RuleKind.THRESHOLD:
        share = s.shares[s.leader]
        of = "all the valid votes" if share == 1 else f"{pct(share)} of the valid votes"
        has = f"{count.label(s.leader)} has {of}"
        return f"{has} ({threshold_words(count)} needed)"
    return f"{count.label(s.leader)} leads by {n(s.margin)}"


def tie_phrase(count: Count, s: Standing) -> str:
    """``tied at 10 each`` (two choices) or ``Ana and Ben tied at 10``."""
    if len(count.choices) == 2:
        return f"tied at {n(top_votes(s))} each"
    tied = [count.label(c) for c in s.ranking if votes_of(s, c) == top_votes(s)]
    return f"{join(tied)} tied at {n(top_votes(s))}"


def call_noun(count: Count, called: Outcome) -> str:
    """What an earlier call was, after "the earlier call": ``for No union``, ``of a runoff``."""
    if called.kind is OutcomeKind.WIN and called.winner is not None:
        return f"for {count.label(called.winner)}"
    if called.kind is OutcomeKind.RUNOFF:
        return "of a runoff"
    if called.kind is OutcomeKind.TIE:
        return "of a tie"
    return f"that no choice can reach {threshold_words(count)}"


def called_phrase(count: Count, s: Standing, outcome: Outcome) -> str:
    """How to say a call, exactly as strong as it is."""
    rule = count.rule
    if outcome.kind is OutcomeKind.RUNOFF:
        places = s.runoff
        if places is not None and len(places.certain) == 2:
            a, b = (count.label(c) for c in places.certain)
            return f"A runoff between {a} and {b} is certain: no choice can reach a majority"
        said = "A runoff is certain: no choice can reach a majority"
        return f"{said}; {runoff_summary(count, s)}" if places is not None else said
    if outcome.kind is OutcomeKind.NO_DECISION:
        return f"No choice can reach {threshold_words(count)} of the valid votes"
    if outcome.kind is OutcomeKind.TIE:
        return f"The count ends in a tie at {n(top_votes(s))}"
    assert outcome.winner is not None
    who = count.label(outcome.winner)
    if rule.kind is RuleKind.MAJORITY:
        if s.most_valid is not None and 2 * votes_of(s, outcome.winner) > s.most_valid:
            return f"{who} has clinched a majority"
        others = join([c.label for c in count.choices if c.id != outcome.winner])
        return f"{who} has clinched the result: {others} can no longer win a majority"
    if rule.kind is RuleKind.PLURALITY:
        return f"{who} has clinched the most votes"
    if s.most_valid and _reaches_threshold(count, s, outcome.winner, s.most_valid):
        return f"{who} has clinched {threshold_words(count)} of the valid votes"
    others = join([c.label for c in count.choices if c.id != outcome.winner])
    return f"{who} has clinched the result: {others} can no longer reach {threshold_words(count)}"


def final_phrase(count: Count, s: Standing) -> str:
    """The result of a final tally, by the count's rule, after ``Final tally:``."""
    decided = s.decided
    if decided is None:
        if s.determinative:
            return too_close_phrase(s.pending or 0)
        return standing_phrase(count, s)
    if s.valid == 0:
        return "no valid votes"
    if decided.kind is OutcomeKind.RUNOFF:
        return runoff_phrase(count, s)
    if decided.kind is OutcomeKind.TIE:
        each = count_of(top_votes(s), "vote")
        if len(count.choices) == 2:
            return f"a tie at {each} each"
        tied = [count.label(c) for c in s.ranking if votes_of(s, c) == top_votes(s)]
        return f"a tie between {join(tied)} at {each} each"
    best = s.ranking[0]
    if decided.kind is OutcomeKind.NO_DECISION:
        has = f"{count.label(best)} has {pct(s.shares[best])}"
        return f"no choice reaches {threshold_words(count)} ({has})"
    assert decided.winner is not None
    w = decided.winner
    rest = [c for c in s.ranking if c != w]
    rule = count.rule.kind
    if rule is RuleKind.MAJORITY and 2 * votes_of(s, w) <= s.valid:  # the tie holder, on a tie
        return f"{tie_phrase(count, s)}; {count.label(rest[0])} falls short of a majority"
    if rule is RuleKind.THRESHOLD and not _reaches_threshold(count, s, w, s.valid):
        short = f"falls short of {threshold_words(count)}"
        if len(count.choices) == 2:
            return f"{count.label(rest[0])} {short} ({pct(s.shares[rest[0]])})"
        best = s.ranking[0]
        has = f"{count.label(best)} has {pct(s.shares[best])}"
        return f"no choice reaches {threshold_words(count)} ({has}), so {count.label(w)} prevails"
    if rule is RuleKind.THRESHOLD:
        reached = (
            f"with {pct(s.shares[w])} of the valid votes, reaching the {threshold_words(count)}"
        )
        if len(count.choices) == 2:
            return (
                f"{count.label(w)} wins {reached} needed "
                f"({n(votes_of(s, w))} to {n(votes_of(s, rest[0]))})"
            )
        return f"{count.label(w)} wins {reached} needed ({count_of(votes_of(s, w), 'vote')})"
    if rule is RuleKind.PLURALITY and s.leader is None:  # the tie holder, on a tie
        return f"{tie_phrase(count, s)}; {count.label(w)} prevails (it holds ties)"
    if len(count.choices) == 2:
        return f"{count.label(w)} wins, {n(votes_of(s, w))} to {n(votes_of(s, rest[0]))}"
    return f"{count.label(w)} wins with {count_of(votes_of(s, w), 'vote')} ({pct(s.shares[w])})"


def runoff_phrase(count: Count, s: Standing) -> str:
    """A final without a majority: who goes to the runoff, and what the count leaves open."""
    places = s.runoff
    certain = places.certain if places is not None else s.ranking[:2]
    if len(certain) == 2:
        a, b = (count.label(c) for c in certain)
        return f"no majority; a runoff between {a} and {b}"
    assert places is not None
    rivals = join([count.label(c) for c in places.open])
    pending = s.pending or 0
    could = f"{count_of(pending, 'challenged ballot')} could change it"
    if certain:
        first = f"no majority; {count.label(certain[0])} goes to a runoff. "
        if pending == 0:
            return (
                f"{first}{rivals} are tied for second place: the count alone does not decide "
                "who joins the runoff"
            )
        return f"{first}Second place between {rivals} is too close to call: {could}"
    if pending == 0:
        return (
            f"no majority; {rivals} are tied for first place: the count alone does not decide "
            "who is in the runoff"
        )
    return f"no majority; who is in the runoff is too close to call between {rivals}: {could}"


def runoff_summary(count: Count, s: Standing) -> str:
    """Who a certain runoff is between, as far as the figures decide it."""
    places = s.runoff
    assert places is not None
    if len(places.certain) == 2:
        a, b = (count.label(c) for c in places.certain)
        return f"a runoff between {a} and {b}"
    rivals = join([count.label(c) for c in places.open])
    if places.certain:
        first = count.label(places.certain[0])
        return f"{first} goes to the runoff; the other place is between {rivals}"
    return f"two of {rivals} go to the runoff"


def too_close_phrase(challenged: int) -> str:
    return f"too close to call: {count_of(challenged, 'challenged ballot')} could change the result"


def challenged_settled(tally: Tally, s: Standing) -> str:
    """What the challenged ballots can no longer do, once everything else is opened and the
    outcome is certain: change the result, or (a runoff) only who is in it."""
    which = f"The {count_of(tally.challenged, 'challenged ballot')}"
    if s.runoff is not None and s.runoff.open:
        return f"{which} cannot prevent a runoff but could change who is in it"
    return f"{which} cannot change the result"


def too_close(tally: Tally) -> str:
    return upper_first(too_close_phrase(tally.challenged))


def votes_of(s: Standing, choice: str) -> int:
    return s.votes[choice]


def top_votes(s: Standing) -> int:
    return s.votes[s.ranking[0]]


def threshold_words(count: Count) -> str:
    t = count.rule.threshold
    assert t is not None
    return fraction_words(t)


def _reaches_threshold(count: Count, s: Standing, choice: str, of: int) -> bool:
    t = count.rule.threshold
    assert t is not None
    return t.denominator * votes_of(s, choice) >= t.numerator * of


def runoff_note(s: Standing, choice: str) -> str:
    """A choice's place in the runoff of a final tally; empty when it has none."""
    places = s.runoff
    if places is None:
        return ""
    if choice in places.certain:
        return "to the runoff"
    if choice not in places.open:
        return ""
    if s.pending:
        return "runoff place undecided"
    return "tied for second" if places.certain else "tied for first"


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]
