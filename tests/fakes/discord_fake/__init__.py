"""A local fake Discord (REST + gateway) that the real discord.py logs in to.

See ``server.FakeDiscord`` for the test API.
"""

from .interaction import FakeInteraction
from .models import (
    RecordedAttachment,
    RecordedCallback,
    RecordedMessage,
    RecordedRequest,
)
from .server import FakeDiscord

__all__ = [
    "FakeDiscord",
    "FakeInteraction",
    "RecordedAttachment",
    "RecordedCallback",
    "RecordedMessage",
    "RecordedRequest",
]
