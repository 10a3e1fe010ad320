"""Every number tallybot shows is computed here, in this package, and only here.

The words used throughout:

* **valid votes**: votes for a choice.
* **counted**: ballots opened and counted, valid or void.
* **challenged**: ballots set aside unresolved; each may yet count for any choice or be thrown
  out.
* **sustained**: challenged ballots whose challenge was upheld (the NLRB's "challenges
  sustained"): resolved and never counted. They were received, so they are part of every
  accounting of the ballots, but they can never become valid votes.
* **outstanding**: ballots received but not yet opened (received - counted - challenged -
  sustained). When a tally is final nothing more will be opened, so nothing is outstanding.
* **pending**: outstanding + challenged: the ballots that could still become valid votes.

A result is *called* only when no way of counting the pending ballots can change it. Each pending
ballot may end up as a vote for any choice or as no vote at all, so a call is checked against the
extreme completions: all pending ballots for one choice (for each choice), or none counted. Under
every rule here a choice's chances only grow with its own votes and only shrink with its rivals',
so if every extreme completion gives the same outcome, so does every completion in between. The
property tests in ``tests/test_arithmetic_exhaustive.py`` check this against brute force.

Worked examples use the Bessemer union election of 2021 at the overnight pause: 3,215 ballots
received, Yes 463, No 1,100; ``no`` holds ties (the union needs a majority). In the examples
(run as doctests by ``tests/test_arithmetic.py``) these names are set::

    BESSEMER = DecisionRule(RuleKind.MAJORITY, tie_holder="no")
    IDS = ("yes", "no")
    PAUSE = {"yes": 463, "no": 1100}

The package is split by idea: :mod:`~bot.domain.arithmetic.figures` (what has been counted and what
is left), :mod:`~bot.domain.arithmetic.calls` (outcomes, and what is certain whatever the pending
ballots do) and :mod:`~bot.domain.arithmetic.summary` (every figure of one tally, computed once) and
:mod:`~bot.domain.arithmetic.race` (the race from here: runoff hopes, shares needed, batches,
points, drawing level, pace).
Everything is imported from here: ``from bot.domain.arithmetic import standing``.
"""

from bot.domain.arithmetic.calls import (
    Outcome,
    OutcomeKind,
    RunoffPlaces,
    can_win,
    certain_outcome,
    challenges_determinative,
    contenders,
    outcome,
    runoff_certain,
    runoff_places,
    switches_to_flip,
    votes_to_clinch,
)
from bot.domain.arithmetic.figures import (
    Votes,
    accounted,
    counted,
    leader,
    margin,
    most_valid_possible,
    outstanding,
    pending,
    quarter,
    ranking,
    share,
    shares,
    turnout,
    valid_votes,
)
from bot.domain.arithmetic.race import (
    Batch,
    DrawLevel,
    about,
    batch,
    draw_level,
    margin_points,
    needed_share,
    pace,
    paused_for,
    runoff_hopefuls,
    runoff_reachable,
)
from bot.domain.arithmetic.summary import Standing, standing

__all__ = [
    "Batch",
    "DrawLevel",
    "Outcome",
    "OutcomeKind",
    "RunoffPlaces",
    "Standing",
    "Votes",
    "about",
    "accounted",
    "batch",
    "can_win",
    "certain_outcome",
    "challenges_determinative",
    "contenders",
    "counted",
    "draw_level",
    "leader",
    "margin",
    "margin_points",
    "most_valid_possible",
    "needed_share",
    "outcome",
    "outstanding",
    "pace",
    "paused_for",
    "pending",
    "quarter",
    "ranking",
    "runoff_certain",
    "runoff_hopefuls",
    "runoff_places",
    "runoff_reachable",
    "share",
    "shares",
    "standing",
    "switches_to_flip",
    "turnout",
    "valid_votes",
    "votes_to_clinch",
]
