"""Loopback fakes of the platforms (Discord, Slack, Telegram) for tests and benchmarks: each
enforces the documented limits and payload rules and records what it receives."""
