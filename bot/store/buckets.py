"""Rate budgets shared by the instances of one PostgreSQL store (table ``rate_buckets``).

A budget is a schedule: its row holds the first turn not yet handed out (``next_at``, on the
database's clock). An instance reserves ``n`` turns ``span`` seconds long in one statement; it
gets the delay until its first turn, and the row moves on by ``n * span``. Turns never pile up
while nobody sends (a row in the past starts again from now), so the instances together never
start more than one request per ``span`` whatever their number, and each waits its share.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

_RESERVE = text(
    """
    INSERT INTO rate_buckets (name, next_at)
    VALUES (:name, clock_timestamp() + make_interval(secs => :span))
    ON CONFLICT (name) DO UPDATE
    SET next_at = greatest(rate_buckets.next_at, clock_timestamp())
        + make_interval(secs => :span)
    RETURNING extract(epoch FROM rate_buckets.next_at - clock_timestamp()) - :span
    """
)
_HOLD = text(
    """
    INSERT INTO rate_buckets (name, next_at)
    VALUES (:name, clock_timestamp() + make_interval(secs => :seconds))
    ON CONFLICT (name) DO UPDATE
    SET next_at = greatest(
        rate_buckets.next_at, clock_timestamp() + make_interval(secs => :seconds)
    )
    """
)


async def reserve(conn: AsyncConnection, name: str, *, turns: int, every: float) -> float:
    """Reserve ``turns`` turns of the budget ``name``, one each ``every`` seconds: the seconds
    from now until the first of them (0 when it is now)."""
    span = turns * every
    delay = await conn.scalar(_RESERVE, {"name": name, "span": span})
    return max(0.0, float(delay or 0.0))


async def hold(conn: AsyncConnection, name: str, seconds: float) -> None:
    """Hand out no turn of ``name`` for ``seconds`` from now (the platform said to wait)."""
    await conn.execute(_HOLD, {"name": name, "seconds": seconds})
