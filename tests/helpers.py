"""Small builders shared by tests: the Bessemer 2021 count and tallies for it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.commands.request import Reply, Request
from bot.commands.throttle import Throttle
from bot.domain.model import Choice, Count, CountStatus, DecisionRule, RuleKind, Tally, TallyState
from bot.platform import Context
from bot.testing.clock import FakeClock

T0 = datetime(2021, 4, 8, 18, 0, tzinfo=UTC)


def bessemer(received: int | None = 3215) -> Count:
    return Count(
        "bessemer-2021",
        "Amazon BHM1 union election, Bessemer AL",
        (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
        DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
        eligible=5876,
        received=received,
        status=CountStatus.COUNTING,
    )


def tally(
    yes: int,
    no: int,
    *,
    void: int = 0,
    challenged: int = 0,
    received: int | None = None,
    state: TallyState = TallyState.COUNTING,
    correction: bool = False,
    seq: int = 0,
    source: str = "nlrb-stream",
    count_id: str = "bessemer-2021",
    sustained: int = 0,
) -> Tally:
    return Tally(
        count_id,
        {"yes": yes, "no": no},
        T0,
        source,
        void=void,
        challenged=challenged,
        received=received,
        state=state,
        correction=correction,
        seq=seq,
        sustained=sustained,
    )


async def _no_commands(request: Request) -> Reply:
    raise AssertionError(f"this adapter was built to take no commands, got {request.text!r}")


def bare_context(**kw: Any) -> Context:
    """A ``bot.platform.Context`` for an adapter tested on its own: no command may reach the
    core, the admin policy denies (unless given), the clock is virtual."""
    clock = FakeClock()
    kw.setdefault("handle", _no_commands)
    return Context(clock=clock, throttle=Throttle(clock), **kw)
