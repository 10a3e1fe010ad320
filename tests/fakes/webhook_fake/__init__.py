"""Loopback receivers of webhooks, as a newsroom, a Mattermost server and a Teams workflow take
them (``FakeReceivers``), each doing what ``docs/how-to/webhooks.md`` asks of a receiver."""

from tests.fakes.webhook_fake.server import FakeReceivers, Shown

__all__ = ["FakeReceivers", "Shown"]
