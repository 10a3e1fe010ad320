"""The push signature, checked against an HMAC computed independently, and its freshness
window."""

from __future__ import annotations

import doctest
import hashlib
import hmac
import logging

import pytest

from bot.errors import RequestError
from bot.ops import signing

BODY = b'{"votes": {"yes": 463, "no": 1100}}'
NOW = 1_617_908_400.0


def test_the_doctest_runs() -> None:
    result = doctest.testmod(signing)
    assert result.attempted >= 1
    assert result.failed == 0


PATH = "/api/counts/bessemer-2021/tally"


def signed(secret: str = "s3cret", now: float = NOW) -> dict[str, str]:
    return signing.headers(secret, now, BODY, path=PATH)


def check(
    secret: str,
    headers: dict[str, str],
    body: bytes = BODY,
    *,
    now: float = NOW,
    method: str = "POST",
    path: str = PATH,
) -> None:
    signing.verify(secret, headers, body, now=now, method=method, path=path)


def test_sign_is_hmac_sha256_over_version_timestamp_method_path_and_body() -> None:
    base = b"v1:1617908400:POST:" + PATH.encode() + b":" + BODY
    expected = hmac.new(b"s3cret", base, hashlib.sha256).hexdigest()
    assert signing.sign("s3cret", "1617908400", BODY, method="POST", path=PATH) == (
        f"v1={expected}"
    )
    assert signed(now=NOW + 0.9) == {
        "X-Tallybot-Timestamp": "1617908400",
        "X-Tallybot-Signature": f"v1={expected}",
    }


def test_verify_accepts_its_own_signature_within_five_minutes() -> None:
    for skew in (-300, 0, 300):
        check("s3cret", signed(), now=NOW + skew)


@pytest.mark.parametrize(
    ("where", "problem"),
    [
        ({"path": "/api/counts/other-count/tally"}, "path /api/counts/other-count/tally"),
        ({"method": "PUT"}, "method PUT"),
    ],
)
def test_a_signature_covers_the_method_and_the_path(where: dict[str, str], problem: str) -> None:
    with pytest.raises(RequestError, match="bad signature") as caught:
        check("s3cret", signed(), method=where.get("method", "POST"), path=where.get("path", PATH))
    assert problem in str(caught.value)
    assert caught.value.status == 401


def v0_headers() -> dict[str, str]:
    return {
        signing.TIMESTAMP_HEADER: "1617908400",
        signing.SIGNATURE_HEADER: signing.sign_v0("s3cret", "1617908400", BODY),
    }


def test_v0_is_hmac_over_timestamp_and_body_accepted_with_a_warning_until_its_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    expected = hmac.new(b"s3cret", b"v0:1617908400:" + BODY, hashlib.sha256).hexdigest()
    assert v0_headers()[signing.SIGNATURE_HEADER] == f"v0={expected}"
    with caplog.at_level(logging.WARNING, logger="bot.ops.signing"):
        for _ in range(2):
            check("s3cret", v0_headers(), path="/anywhere")  # v0 covers no path
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2
    assert "deprecated v0" in warned[0]
    assert "2027-07-01" in warned[0]
    end = signing.V0_ACCEPTED_UNTIL.timestamp()
    late = {signing.TIMESTAMP_HEADER: str(int(end))}
    late[signing.SIGNATURE_HEADER] = signing.sign_v0("s3cret", late[signing.TIMESTAMP_HEADER], BODY)
    with pytest.raises(RequestError, match="bad signature: v0 signatures are no longer"):
        check("s3cret", late, now=end)
    with pytest.raises(RequestError, match="bad signature"):
        check("other", v0_headers())


@pytest.mark.parametrize(
    ("secret", "body", "now", "problem"),
    [
        ("other", BODY, NOW, "bad signature"),
        ("s3cret", BODY + b" ", NOW, "bad signature"),
        ("s3cret", BODY, NOW + 301, "stale timestamp: X-Tallybot-Timestamp is 301 s old"),
        ("s3cret", BODY, NOW - 301, "stale timestamp: X-Tallybot-Timestamp is 301 s far in the"),
    ],
)
def test_verify_refuses(secret: str, body: bytes, now: float, problem: str) -> None:
    with pytest.raises(RequestError, match=problem) as caught:
        check(secret, signed(), body, now=now)
    assert caught.value.status == 401


def test_a_non_ascii_signature_is_refused_not_crashed() -> None:
    for bad in ("v0=é", "v1=é", "é"):
        headers = {**signed(), "X-Tallybot-Signature": bad}
        with pytest.raises(RequestError, match="bad signature"):
            check("s3cret", headers)


@pytest.mark.parametrize("timestamp", ["9" * 5000, "1" + "0" * 4300, "16179084000"])
def test_an_absurd_timestamp_is_refused_not_crashed(timestamp: str) -> None:
    """Past 4,300 digits int() raises ValueError (a 500 at the server): refused as 401."""
    headers = {
        signing.TIMESTAMP_HEADER: timestamp,
        signing.SIGNATURE_HEADER: signing.sign("s3cret", timestamp, BODY, method="POST", path=PATH),
    }
    with pytest.raises(RequestError, match="X-Tallybot-Timestamp") as caught:
        check("s3cret", headers)
    assert caught.value.status == 401
