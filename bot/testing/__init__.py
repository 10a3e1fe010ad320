"""Test doubles shipped with tallybot, as httpx ships ``MockTransport``: for tallybot's own tests,
its benches, and anyone who builds on it. Production code never imports this package (a test
checks it).

- :class:`~bot.testing.adapter.RecordingAdapter`: an in-memory adapter that records what it is
  sent and can be told to fail;
- :class:`~bot.testing.sources.FakeSource`: a source that hands out queued tallies and errors;
- :class:`~bot.testing.clock.FakeClock`: a clock that moves only when told to;
- :mod:`~bot.testing.limits` and :mod:`~bot.testing.notify`: what the loopback fakes of the
  platforms (``bot.testing.fakes``) share: rate limiters on an injected clock, and a way to wait for
  what a fake records.
"""
