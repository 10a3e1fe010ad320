"""What the fakes recorded of a fan-out: when its requests arrived, and how full the
platform's window was (used by ``bench/instances.py``).

From the fake's own arrival times: the first and last post after the tally was accepted, the
steady rate between them, the gaps between successive accepted requests counted against the
platform-wide limit (p50 / p99 / max), and the most of them that arrived within any one window
(a sliding window: at most the limit when nothing was ever exceeded).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from tests.fakes.discord_fake import FakeDiscord
from tests.fakes.slack_fake import FakeSlack


@dataclass(frozen=True)
class Timing:
    first: float
    """Seconds from the tally accepted to the first post's arrival."""
    last: float
    """... to the last post's arrival."""
    posts: int
    gap_p50_ms: float
    gap_p99_ms: float
    gap_max_ms: float
    most_in_window: int
    """The most accepted requests under the platform-wide limit in any one window."""

    def line(self, rate: float) -> str:
        steady = (self.posts - 1) / (self.last - self.first) if self.last > self.first else 0.0
        return (
            f"first post {self.first:.2f} s, last {self.last:.2f} s, steady {steady:.2f}/s "
            f"({steady / rate:.3f} of {rate:g}/s); gaps p50 {self.gap_p50_ms:.1f} ms, "
            f"p99 {self.gap_p99_ms:.1f} ms, max {self.gap_max_ms:.0f} ms; "
            f"most in any window {self.most_in_window}"
        )


def most_in_window(times: Sequence[float], window: float) -> int:
    """The most of ``times`` (sorted) within any ``window`` seconds (both ends counted)."""
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] >= window:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def timing(posts: Sequence[float], limited: Sequence[float], began: float, window: float) -> Timing:
    """``posts``: arrival times of the posts; ``limited``: of every accepted request counted
    against the platform-wide limit; ``began``: when the tally was accepted (same clock)."""
    posts, limited = sorted(posts), sorted(limited)
    gaps = sorted(b - a for a, b in itertools.pairwise(limited)) or [0.0]

    def pct(q: float) -> float:
        return 1000 * gaps[min(len(gaps) - 1, int(q * len(gaps)))]

    return Timing(
        first=posts[0] - began if posts else 0.0,
        last=posts[-1] - began if posts else 0.0,
        posts=len(posts),
        gap_p50_ms=pct(0.5),
        gap_p99_ms=pct(0.99),
        gap_max_ms=1000 * gaps[-1],
        most_in_window=most_in_window(limited, window),
    )


def discord_timing(fake: FakeDiscord, began: float, window: float) -> Timing:
    """Posts are the accepted POSTs of messages; every accepted request with the bot's token
    counts against the global limit (the interaction routes do not)."""
    ok = [r for r in fake.requests if 200 <= r.status < 300 and r.time >= began]
    posts = [r.time for r in ok if r.method == "POST" and r.path.endswith("/messages")]
    limited = [r.time for r in ok if not r.path.startswith(("/interactions", "/webhooks"))]
    return timing(posts, limited, began, window)


def slack_timing(fake: FakeSlack, began: float, window: float) -> Timing:
    """Posts are the accepted chat.postMessage calls (the workspace-wide window's method)."""
    posts = [c.time for c in fake.calls_to("chat.postMessage") if c.ok and c.time >= began]
    return timing(posts, posts, began, window)
