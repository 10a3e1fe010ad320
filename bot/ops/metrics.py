"""Prometheus metrics for one running bot, on a registry of its own.

Every :class:`~bot.runtime.app.App` has its own :class:`Metrics` (and so its own
``CollectorRegistry``, never the process-global one), filled in two ways: the core calls the
:class:`Hooks` methods as things happen, and :meth:`Metrics.refresh` sets the gauges that describe
the present (queue depth, time since each count changed, stale sources) just before a scrape.

==========================================  ======================================================
``tallybot_polls_total{count,result}``      polls by result: accepted, rejected, no_change,
                                            not_modified (a 304 or an unchanged body), failed,
                                            lease_lost (read as another instance took it over)
``tallybot_fetch_errors_total{count,kind}`` failed fetch attempts (retries included), transient
                                            or permanent
``tallybot_tallies_accepted_total{count}``  tallies the pipeline accepted (polled, pushed, typed)
``tallybot_tallies_rejected_total{count,reason}``  tallies the detector rejected, by reason
``tallybot_push_requests_total{status}``    push requests by HTTP status answered
``tallybot_messages_sent_total{platform,action}``  deliveries that went out (post, edit_live,
                                            alert)
``tallybot_messages_retried_total{platform}``  transient delivery failures that will be retried
``tallybot_messages_failed_total{platform}``   deliveries that gave up (dead)
``tallybot_outbox_depth{platform}``         deliveries not yet finished (pending or sending)
``tallybot_delivery_latency_seconds{platform}``  histogram: tally accepted to message posted
``tallybot_count_seconds_since_change{count}``   since the count's last accepted tally
``tallybot_source_stale{count}``            1 when the count's polled source is stale
``tallybot_store_up``                       1 when the store answered the last scrape; when 0,
                                            outbox depth and time since change are not updated
==========================================  ======================================================

Every sample carries ``tallybot_instance``, the id of the instance that serves it (``bot.cluster``).
The ``count`` label is the id of one of the operator's counts, or ``tenant`` for all the counts
places own (``bot.ops.hooks.count_label``): their ids are theirs, and nothing here asks who
scrapes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.metrics_core import Metric

from bot.ops.hooks import Hooks

CONTENT_TYPE = CONTENT_TYPE_LATEST
"""The Content-Type of :meth:`Metrics.render`'s output (Prometheus text format 0.0.4)."""

LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
"""Seconds from a tally's acceptance to its message being posted."""


INSTANCE_LABEL = "tallybot_instance"
"""The label naming the instance on every sample (not ``instance``: Prometheus sets that one
to the scraped target, and would rename ours)."""


class _Labelled:
    """A registry's samples, each with the instance's label added (what ``render`` writes)."""

    def __init__(self, registry: CollectorRegistry, instance: str) -> None:
        self.registry = registry
        self.instance = instance

    def collect(self) -> Iterator[Metric]:
        for metric in self.registry.collect():
            labelled = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            for s in metric.samples:
                labels = {**s.labels, INSTANCE_LABEL: self.instance}
                labelled.add_sample(s.name, labels, s.value, s.timestamp, s.exemplar)
            yield labelled


class Metrics(Hooks):
    """The bot's metrics (see the module docstring for the list); with ``instance``, every
    sample carries the label ``tallybot_instance`` with it."""

    def __init__(self, instance: str | None = None) -> None:
        self.instance = instance
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.polls = Counter(
            "tallybot_polls", "Polls of a count's source, by result", ["count", "result"],
            registry=r,
        )  # fmt: skip
        self.fetch_errors = Counter(
            "tallybot_fetch_errors", "Failed fetch attempts (retries included)",
            ["count", "kind"], registry=r,
        )  # fmt: skip
        self.accepted = Counter(
            "tallybot_tallies_accepted", "Tallies accepted by the pipeline", ["count"], registry=r
        )
        self.rejected = Counter(
            "tallybot_tallies_rejected", "Tallies rejected by the detector, by reason",
            ["count", "reason"], registry=r,
        )  # fmt: skip
        self.push_requests = Counter(
            "tallybot_push_requests", "Push ingest requests, by HTTP status", ["status"],
            registry=r,
        )  # fmt: skip
        self.sent = Counter(
            "tallybot_messages_sent", "Deliveries that went out", ["platform", "action"],
            registry=r,
        )  # fmt: skip
        self.retries = Counter(
            "tallybot_messages_retried", "Transient delivery failures to be retried",
            ["platform"], registry=r,
        )  # fmt: skip
        self.failures = Counter(
            "tallybot_messages_failed", "Deliveries that gave up (dead)", ["platform"], registry=r
        )
        self.outbox_depth = Gauge(
            "tallybot_outbox_depth", "Deliveries not yet finished (pending or sending)",
            ["platform"], registry=r,
        )  # fmt: skip
        self.latency = Histogram(
            "tallybot_delivery_latency_seconds", "Seconds from tally accepted to message posted",
            ["platform"], buckets=LATENCY_BUCKETS, registry=r,
        )  # fmt: skip
        self.since_change = Gauge(
            "tallybot_count_seconds_since_change", "Seconds since the count's last accepted tally",
            ["count"], registry=r,
        )  # fmt: skip
        self.store_up = Gauge(
            "tallybot_store_up", "1 when the store answered the last scrape", registry=r
        )
        self.stale = Gauge(
            "tallybot_source_stale", "1 when the count's polled source is stale", ["count"],
            registry=r,
        )  # fmt: skip

    # -- the hooks the core calls -------------------------------------------------------------

    def polled(self, count_id: str, result: str) -> None:
        self.polls.labels(count_id, result).inc()

    def fetch_failed(self, count_id: str, kind: str) -> None:
        self.fetch_errors.labels(count_id, kind).inc()

    def tally_accepted(self, count_id: str) -> None:
        self.accepted.labels(count_id).inc()

    def tally_rejected(self, count_id: str, reason: str) -> None:
        self.rejected.labels(count_id, reason).inc()

    def delivered(self, platform: str, action: str, latency: float) -> None:
        self.sent.labels(platform, action).inc()
        self.latency.labels(platform).observe(max(0.0, latency))

    def retried(self, platform: str) -> None:
        self.retries.labels(platform).inc()

    def failed(self, platform: str) -> None:
        self.failures.labels(platform).inc()

    # -- the ops server's own -----------------------------------------------------------------

    def pushed(self, status: int) -> None:
        """A push request was answered with ``status``."""
        self.push_requests.labels(str(status)).inc()

    def refresh(
        self,
        *,
        depth: Mapping[str, int],
        since_change: Mapping[str, float | None],
        stale: Mapping[str, bool],
    ) -> None:
        """Set the gauges of the present: outbox depth per platform, seconds since each count
        last changed (a count with no tally yet has no sample) and stale sources."""
        self.store_up.set(1)
        for platform, n in depth.items():
            self.outbox_depth.labels(platform).set(n)
        self.since_change.clear()
        for count_id, seconds in since_change.items():
            if seconds is not None:
                self.since_change.labels(count_id).set(max(0.0, seconds))
        for count_id, is_stale in stale.items():
            self.stale.labels(count_id).set(1 if is_stale else 0)

    def store_failed(self) -> None:
        """The store did not answer a scrape: the store-based gauges keep their last values."""
        self.store_up.set(0)

    def render(self) -> bytes:
        """Every metric in the Prometheus text format."""
        if self.instance is None:
            return generate_latest(self.registry)
        return generate_latest(_Labelled(self.registry, self.instance))
