"""Jittered exponential backoff, and a retry loop for errors worth retrying.

Used by the source pollers and, later, by delivery. Nothing here sleeps on its own: the caller
passes the ``sleep`` coroutine (``asyncio.sleep`` in production, a recorder in tests).

    >>> import random
    >>> rng = random.Random(7)
    >>> 0.0 <= backoff(3, rng=rng) <= 4.0   # full jitter: uniform(0, min(cap, base * 2**3))
    True
"""

from __future__ import annotations

import email.utils
import math
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

T = TypeVar("T")

_SYSTEM_RNG = random.SystemRandom()


def backoff(
    attempt: int, *, base: float = 0.5, cap: float = 30.0, rng: random.Random | None = None
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    Full jitter: a uniform draw from ``[0, min(cap, base * 2**attempt)]``, so that many pollers
    failing at once do not retry in step. ``rng`` makes the draw reproducible in tests.
    """
    if attempt < 0:
        raise ValueError(f"attempt must be >= 0, got {attempt}")
    if base < 0 or cap < 0:
        raise ValueError(f"base and cap must be >= 0, got base={base}, cap={cap}")
    # 2**attempt overflows a float for large attempts; the cap applies long before that.
    ceiling = cap if attempt >= 1024 else min(cap, base * 2.0**attempt)
    return (rng or _SYSTEM_RNG).uniform(0.0, ceiling)


_DELTA_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header value; None when it is missing or unusable.

    Delta-seconds (``"7"``; a decimal too, ``"1.5"``, as Discord sends), or, given ``now``, an
    HTTP date: the seconds from ``now`` until then, at least 0. Without ``now`` a date is
    unusable (a caller without a clock does not guess the time).
    """
    if value is None:
        return None
    value = value.strip()
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    if now is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def retry_after_header(
    headers: Mapping[str, Any] | None, *, now: datetime | None = None
) -> float | None:
    """:func:`parse_retry_after` of the ``Retry-After`` in ``headers``, whatever the case of its
    name (a list of values: the first)."""
    for name, value in (headers or {}).items():
        if name.lower() != "retry-after":
            continue
        raw = value[0] if isinstance(value, list | tuple) and value else value
        return parse_retry_after(str(raw), now=now)
    return None


def retry_after_hint(exc: BaseException) -> float | None:
    """The ``retry_after`` seconds an error carries, if any (e.g. from an HTTP Retry-After).

    Works for any error with a numeric ``retry_after`` attribute, such as
    :class:`bot.errors.TransientDeliveryError` and
    :class:`bot.ingest.sources.http.HttpTransientError`. Negative, NaN or infinite hints are
    ignored.
    """
    value = getattr(exc, "retry_after", None)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return float(value)


async def retry_transient(
    fn: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    sleep: Callable[[float], Awaitable[None]],
    is_transient: Callable[[BaseException], bool],
    rng: random.Random | None = None,
    retry_after: Callable[[BaseException], float | None] | None = None,
    base: float = 0.5,
    cap: float = 30.0,
) -> T:
    """Call ``fn`` up to ``attempts`` times, retrying only errors ``is_transient`` accepts.

    Between tries it awaits ``sleep(backoff(i, base=base, cap=cap, rng=rng))``; when
    ``retry_after`` returns a hint for the error, the wait is at least that hint (a server's
    Retry-After is honoured even above ``cap``). An error that is not transient is raised at
    once; when the attempts run out the last error is raised. Only :class:`Exception` is
    caught, so cancellation always goes through.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    attempt = 0
    while True:
        try:
            return await fn()
        except Exception as exc:
            if not is_transient(exc) or attempt + 1 >= attempts:
                raise
            delay = backoff(attempt, base=base, cap=cap, rng=rng)
            hint = retry_after(exc) if retry_after is not None else None
            if hint is not None:
                delay = max(delay, hint)
            attempt += 1
        await sleep(delay)
