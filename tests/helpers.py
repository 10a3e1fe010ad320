"""Small builders shared by tests: the Bessemer 2021 count and tallies for it; and
:func:`statements`, every SQL statement the store sends (the tests and benches that count them)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from bot.commands.builtin import VERBS
from bot.commands.inflight import Backlog
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


@contextmanager
def statements() -> Iterator[list[str]]:
    """Every SQL statement any store of this process sends in the block, in order (SQLAlchemy's
    own hook: ``BEGIN IMMEDIATE`` on SQLite counts, a PostgreSQL ``BEGIN``/``COMMIT`` does not)."""
    sent: list[str] = []

    def heard(_c: Any, _cur: Any, sql: str, _p: Any, _ctx: Any, _many: bool) -> None:
        sent.append(sql)

    event.listen(Engine, "before_cursor_execute", heard)
    try:
        yield sent
    finally:
        event.remove(Engine, "before_cursor_execute", heard)


def stand_in_commands() -> Any:
    """A stand-in for ``bot.commands.handler.Commands`` where a plug-in's adapter factory is
    only built, not run: the attributes the factory reads, none of them used."""
    return SimpleNamespace(
        handle=None, clock=None, throttle=None, db=None, verbs=VERBS, instance=None,
        backlog=Backlog(),
    )  # fmt: skip
