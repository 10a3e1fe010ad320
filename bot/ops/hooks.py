"""The hooks the core calls at the moments worth counting; all no-ops here.

The poller, pipeline and dispatcher take an optional ``metrics: Hooks`` and call it where
something happens; :class:`bot.ops.metrics.Metrics` overrides every method to count it for
Prometheus. Arguments are plain strings, so this module depends on nothing.
"""

from __future__ import annotations


class Hooks:
    """Metrics hooks that do nothing (the default); subclass and override to count."""

    def polled(self, count_id: str, result: str) -> None:
        """A poll ended with ``result`` (a ``PollResult`` value, e.g. ``"not_modified"``)."""

    def fetch_failed(self, count_id: str, kind: str) -> None:
        """One fetch attempt failed; ``kind`` is ``"transient"`` or ``"permanent"``."""

    def tally_accepted(self, count_id: str) -> None:
        """The pipeline accepted a tally (polled, pushed or typed)."""

    def tally_rejected(self, count_id: str, reason: str) -> None:
        """The detector rejected a tally; ``reason`` is a ``RejectReason`` value."""

    def delivered(self, platform: str, action: str, latency: float) -> None:
        """A delivery went out, ``latency`` seconds after its tally was accepted."""

    def retried(self, platform: str) -> None:
        """A delivery failed transiently and will be retried."""

    def failed(self, platform: str) -> None:
        """A delivery gave up (DEAD)."""


NO_HOOKS = Hooks()
