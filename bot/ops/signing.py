"""The push signature: who may push a tally, to which count, and that the request is fresh.

Like Slack's request signing. The sender takes the current Unix time in whole seconds as the
timestamp and sends::

    X-Tallybot-Timestamp: 1617908400
    X-Tallybot-Signature: v1=<hex of HMAC-SHA256(secret,
                               "v1:" + timestamp + ":" + method + ":" + path + ":" + raw body)>

``method`` is the HTTP method (``POST``) and ``path`` the request's path as sent, without the
query (``/api/counts/bessemer-2021/tally``): a signature made for one count does not verify on
another's endpoint. The server recomputes the HMAC over the raw body bytes it received,
compares it in constant time, and refuses a timestamp more than :data:`TOLERANCE` seconds from
its own clock (either way), so a captured request cannot be replayed later; inside that window,
the server refuses a request it has seen before (see :class:`Verified`).

The first scheme, ``v0=<hex of HMAC-SHA256(secret, "v0:" + timestamp + ":" + raw body)>``,
covers neither the method nor the path. It is deprecated: still accepted, with a warning in the
log each time, until :data:`V0_ACCEPTED_UNTIL`, and refused from then on.

    >>> sign("s3cret", "1617908400", b'{"votes": {"yes": 463, "no": 1100}}',
    ...      method="POST", path="/api/counts/bessemer-2021/tally")[:15]
    'v1=d20405e4d1e2'
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.errors import RequestError

log = logging.getLogger(__name__)

VERSION = "v1"
V0 = "v0"
V0_ACCEPTED_UNTIL = datetime(2027, 7, 1, tzinfo=UTC)
"""From this moment, a ``v0`` signature (no method, no path) is refused."""
TIMESTAMP_HEADER = "X-Tallybot-Timestamp"
SIGNATURE_HEADER = "X-Tallybot-Signature"
TOLERANCE = 300.0
"""Seconds a timestamp may be off from the server's clock (5 minutes)."""
MAX_TIMESTAMP_DIGITS = 12
"""Unix time in seconds has 10 digits until the year 2286; 12 leaves room and keeps int()
away from absurd input (past 4,300 digits it raises instead of converting)."""


def _mac(secret: str, base: bytes) -> str:
    return hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def sign(secret: str, timestamp: str, body: bytes, *, method: str, path: str) -> str:
    """The ``X-Tallybot-Signature`` value for ``body`` sent at ``timestamp`` as ``method
    path``."""
    base = f"{VERSION}:{timestamp}:{method.upper()}:{path}:".encode() + body
    return f"{VERSION}={_mac(secret, base)}"


def sign_v0(secret: str, timestamp: str, body: bytes) -> str:
    """The deprecated ``v0`` signature (body and timestamp only)."""
    return f"{V0}={_mac(secret, f'{V0}:{timestamp}:'.encode() + body)}"


def headers(
    secret: str, now: float, body: bytes, *, path: str, method: str = "POST"
) -> dict[str, str]:
    """Both headers for a request to ``path`` sent at Unix time ``now``."""
    timestamp = str(int(now))
    signature = sign(secret, timestamp, body, method=method, path=path)
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature}


@dataclass(frozen=True, slots=True)
class Verified:
    """A request whose signature checked out."""

    timestamp: int
    signature: str
    """The signature (``v1=...``): unique to the body, method and path at that second, so it
    names the request (a ``v0`` one only with the count it was sent to)."""

    @property
    def valid_until(self) -> int:
        """The Unix time after which the request no longer verifies (stale)."""
        return self.timestamp + int(TOLERANCE)


def verify(
    secret: str,
    request_headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    method: str,
    path: str,
) -> Verified:
    """Raise :class:`RequestError` (401) unless the request (``method path``) is signed with
    ``secret`` and its timestamp is within :data:`TOLERANCE` seconds of ``now``.

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
    if signature.startswith(f"{V0}="):
        return _verify_v0(secret, timestamp, signature, body, now=now, path=path)
    expected = sign(secret, timestamp, body, method=method, path=path)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise RequestError(
            f"bad signature: {SIGNATURE_HEADER} does not match the request (expected "
            f"v1=hex(HMAC_SHA256(secret, 'v1:' + timestamp + ':' + method + ':' + path + ':' "
            f"+ body)), with method {method.upper()} and path {path})",
            status=401,
        )
    return Verified(int(timestamp), expected)


def _verify_v0(
    secret: str, timestamp: str, signature: str, body: bytes, *, now: float, path: str
) -> Verified:
    until = V0_ACCEPTED_UNTIL.timestamp()
    if now >= until:
        raise RequestError(
            f"bad signature: v0 signatures are no longer accepted (since "
            f"{V0_ACCEPTED_UNTIL:%Y-%m-%d}); sign with v1, which covers the method and path",
            status=401,
        )
    expected = sign_v0(secret, timestamp, body)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise RequestError(
            f"bad signature: {SIGNATURE_HEADER} does not match the body "
            f"(expected v0=hex(HMAC_SHA256(secret, 'v0:' + timestamp + ':' + body)))",
            status=401,
        )
    log.warning(
        "a push to %s was signed with the deprecated v0 scheme (it covers neither the method "
        "nor the path); accepted until %s: sign with v1",
        path,
        f"{V0_ACCEPTED_UNTIL:%Y-%m-%d}",
    )
    return Verified(int(timestamp), expected)
