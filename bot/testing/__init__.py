"""Test doubles of tallybot's own seams, shipped as httpx ships ``MockTransport`` and
procrastinate its ``InMemoryConnector``: for tallybot's own tests, its benches, and anyone
who builds on it. Production code never imports this package (a test checks it). The
loopback fakes of the platforms are test code (``tests/fakes/``): not shipped.

- :class:`~bot.testing.adapter.RecordingAdapter`: an in-memory adapter that records what it is
  sent and can be told to fail;
- :class:`~bot.testing.sources.FakeSource`: a source that hands out queued tallies and errors;
- :class:`~bot.testing.clock.FakeClock`: a clock that moves only when told to.
"""
