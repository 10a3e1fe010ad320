"""Delivery: from the outbox to the platforms, paced, retried, never doubled.

:mod:`~bot.delivery.worker` drains the outbox per platform (supervised, coalescing what a newer
message covers); :mod:`~bot.delivery.courier` carries one delivery out (confirm, send, record);
:mod:`~bot.delivery.final_charts` draws the chart that goes with a final message;
:mod:`~bot.delivery.pacing` and :mod:`~bot.delivery.ratelimit` keep every request under the
platform's limits. Every line they log comes from the worker's logger, ``bot.delivery.worker``
(one summary per fan-out from ``bot.delivery.worker.fanout``).
"""
