"""Rate budgets shared by the instances of one PostgreSQL store (table ``rate_buckets``).

A budget's row holds the time before which nobody may send under it (``next_at``, on the
database's clock): a 429 the platform answered for the bucket holds it there for every instance
(``hold``), and an instance that takes the budget over waits that long first (``held_for``).
Which instance sends under a budget is a lease (``bot.delivery.shared``). Starts that the
instances space among themselves (Discord's session starts) reserve turns from the row
(``reserve``: the row moves on by the turns taken; ``bot.cluster.turns``).
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
_HELD_FOR = text(
    """
    SELECT extract(epoch FROM next_at - clock_timestamp()) FROM rate_buckets WHERE name = :name
    """
)


async def hold(conn: AsyncConnection, name: str, seconds: float) -> None:
    """Let nobody send under ``name`` for ``seconds`` from now (the platform said to wait)."""
    await conn.execute(_HOLD, {"name": name, "seconds": seconds})


async def held_for(conn: AsyncConnection, name: str) -> float:
    """Seconds from now until anyone may send under ``name`` (0 when it is not held)."""
    left = await conn.scalar(_HELD_FOR, {"name": name})
    return max(0.0, float(left or 0.0))


async def reserve(conn: AsyncConnection, name: str, *, turns: int, every: float) -> float:
    """Reserve ``turns`` turns of the budget ``name``, one each ``every`` seconds: the seconds
    from now until the first of them (0 when it is now)."""
    span = turns * every
    delay = await conn.scalar(_RESERVE, {"name": name, "span": span})
    return max(0.0, float(delay or 0.0))
