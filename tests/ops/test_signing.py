"""The push signature, checked against an HMAC computed independently, and its freshness
window."""

from __future__ import annotations

import doctest
import hashlib
import hmac

import pytest

from bot.errors import RequestError
from bot.ops import signing

BODY = b'{"votes": {"yes": 463, "no": 1100}}'
NOW = 1_617_908_400.0


def test_the_doctest_runs() -> None:
    result = doctest.testmod(signing)
    assert result.attempted >= 1
    assert result.failed == 0


def test_sign_is_hmac_sha256_over_version_timestamp_and_body() -> None:
    expected = hmac.new(b"s3cret", b"v0:1617908400:" + BODY, hashlib.sha256).hexdigest()
    assert signing.sign("s3cret", "1617908400", BODY) == f"v0={expected}"
    assert signing.headers("s3cret", NOW + 0.9, BODY) == {
        "X-Tallybot-Timestamp": "1617908400",
        "X-Tallybot-Signature": f"v0={expected}",
    }


def test_verify_accepts_its_own_signature_within_five_minutes() -> None:
    headers = signing.headers("s3cret", NOW, BODY)
    for skew in (-300, 0, 300):
        signing.verify("s3cret", headers, BODY, now=NOW + skew)


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
    headers = signing.headers("s3cret", NOW, BODY)
    with pytest.raises(RequestError, match=problem) as caught:
        signing.verify(secret, headers, body, now=now)
    assert caught.value.status == 401


def test_a_non_ascii_signature_is_refused_not_crashed() -> None:
    headers = {**signing.headers("s3cret", NOW, BODY), "X-Tallybot-Signature": "v0=é"}
    with pytest.raises(RequestError, match="bad signature"):
        signing.verify("s3cret", headers, BODY, now=NOW)


@pytest.mark.parametrize("timestamp", ["9" * 5000, "1" + "0" * 4300, "16179084000"])
def test_an_absurd_timestamp_is_refused_not_crashed(timestamp: str) -> None:
    """Past 4,300 digits int() raises ValueError (a 500 at the server): refused as 401."""
    headers = {
        signing.TIMESTAMP_HEADER: timestamp,
        signing.SIGNATURE_HEADER: signing.sign("s3cret", timestamp, BODY),
    }
    with pytest.raises(RequestError, match="X-Tallybot-Timestamp") as caught:
        signing.verify("s3cret", headers, BODY, now=NOW)
    assert caught.value.status == 401
