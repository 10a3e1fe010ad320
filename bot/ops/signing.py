"""The push signature: who may push a tally, and that the request is fresh.

Like Slack's request signing. The sender takes the current Unix time in whole seconds as the
timestamp and sends::

    X-Tallybot-Timestamp: 1617908400
    X-Tallybot-Signature: v0=<hex of HMAC-SHA256(secret, "v0:" + timestamp + ":" + raw body)>

The server recomputes the HMAC over the raw body bytes it received, compares it in constant
time, and refuses a timestamp more than :data:`TOLERANCE` seconds from its own clock (either
way), so a captured request cannot be replayed later; inside that window, the server refuses a
request it has seen before (see :class:`Verified`).

    >>> sign("s3cret", "1617908400", b'{"votes": {"yes": 463, "no": 1100}}')[:15]
    'v0=a5f4652e2095'
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from bot.errors import RequestError

VERSION = "v0"
TIMESTAMP_HEADER = "X-Tallybot-Timestamp"
SIGNATURE_HEADER = "X-Tallybot-Signature"
TOLERANCE = 300.0
"""Seconds a timestamp may be off from the server's clock (5 minutes)."""
MAX_TIMESTAMP_DIGITS = 12
"""Unix time in seconds has 10 digits until the year 2286; 12 leaves room and keeps int()
away from absurd input (past 4,300 digits it raises instead of converting)."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``X-Tallybot-Signature`` value for ``body`` sent at ``timestamp``."""
    base = f"{VERSION}:{timestamp}:".encode() + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return f"{VERSION}={digest}"


def headers(secret: str, now: float, body: bytes) -> dict[str, str]:
    """Both headers for a request sent at Unix time ``now``."""
    timestamp = str(int(now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body)}


@dataclass(frozen=True, slots=True)
class Verified:
    """A request whose signature checked out."""

    timestamp: int
    signature: str
    """The signature (``v0=...``): unique to the body at that second, so it names the request."""

    @property
    def valid_until(self) -> int:
        """The Unix time after which the request no longer verifies (stale)."""
        return self.timestamp + int(TOLERANCE)


def verify(secret: str, request_headers: Mapping[str, str], body: bytes, *, now: float) -> Verified:
    """Raise :class:`RequestError` (401) unless the request is signed with ``secret`` and its
    timestamp is within :data:`TOLERANCE` seconds of ``now``.

    Inside that window the same request verifies again: the server keeps the signature of each
    push it took in (``bot.store.push_receipts``) to tell a replay."""
    timestamp = request_headers.get(TIMESTAMP_HEADER)
    signature = request_headers.get(SIGNATURE_HEADER)
    if not timestamp:
        raise RequestError(f"missing {TIMESTAMP_HEADER} header", status=401)
    if not signature:
        raise RequestError(f"missing {SIGNATURE_HEADER} header", status=401)
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > MAX_TIMESTAMP_DIGITS:
        raise RequestError(
            f"{TIMESTAMP_HEADER} must be Unix time in whole seconds, got {timestamp[:20]!r}",
            status=401,
        )
    skew = now - int(timestamp)
    if abs(skew) > TOLERANCE:
        when = "old" if skew > 0 else "far in the future"
        raise RequestError(
            f"stale timestamp: {TIMESTAMP_HEADER} is {abs(skew):.0f} s {when} (at most "
            f"{TOLERANCE:.0f} s allowed; check the sender's clock)",
            status=401,
        )
    expected = sign(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise RequestError(
            f"bad signature: {SIGNATURE_HEADER} does not match the body "
            f"(expected v0=hex(HMAC_SHA256(secret, 'v0:' + timestamp + ':' + body)))",
            status=401,
        )
    return Verified(int(timestamp), expected)
