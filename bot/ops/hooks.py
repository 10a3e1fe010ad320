"""The hooks the core calls at the moments worth counting; all no-ops here.

The poller, pipeline and dispatcher take an optional ``metrics: Hooks`` and call it where
something happens; :class:`bot.ops.metrics.Metrics` overrides every method to count it for
Prometheus. Arguments are plain strings.

``/metrics`` answers anyone who can reach it, so a count's id is a label only when the count is
the operator's (:func:`count_label`): a place's counts are counted together as ``tenant``.
"""

from __future__ import annotations

from bot.domain.model import OPERATOR

TENANT_LABEL = "tenant"
"""The ``count`` label of every count a server, workspace or chat owns."""


def count_label(owner: str, count_id: str) -> str:
    """The ``count`` label of a count's metrics: its id when the operator owns it."""
    return count_id if owner == OPERATOR else TENANT_LABEL


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
