"""Loopback fakes of the platforms (Discord, Slack, Telegram) for tests and benchmarks: each
enforces the documented limits and payload rules and records what it receives. What they
share is in ``loopback``; the tests of the fakes themselves sit beside them. Test code: the
wheel and the image carry none of it."""
