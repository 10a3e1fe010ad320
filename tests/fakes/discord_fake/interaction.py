"""One injected interaction: its token, payload and everything the bot did with it."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Protocol

from .models import JSON, RecordedCallback, RecordedMessage, Snowflakes, User
from .payloads import user as user_payload


class FakeDiscord(Protocol):
    """What an interaction reads of the fake's state (``server.FakeDiscord``)."""

    snowflakes: Snowflakes
    clock: Callable[[], float]
    users: dict[int, User]

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5) -> None: ...  # noqa: ASYNC109


class FakeInteraction:
    """Handle on one injected interaction and everything the bot did with it."""

    def __init__(
        self,
        fake: FakeDiscord,
        *,
        type: int,
        guild_id: int | None,
        channel_id: int,
        user_id: int,
        name: str,
        component_message_id: int | None = None,
    ) -> None:
        self._fake = fake
        self.id = fake.snowflakes.next()
        self.token = "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48)
        self.type = type
        self.guild_id = guild_id
        self.channel_id = channel_id
        self.user_id = user_id
        self.name = name
        self.component_message_id = component_message_id
        self.payload: JSON = {}
        self.injected_at = fake.clock()
        self.callbacks: list[RecordedCallback] = []  # every attempt, accepted or not
        self.original: RecordedMessage | None = None
        self.followups: list[RecordedMessage] = []
        self.edits: list[JSON] = []  # PATCH bodies sent to @original
        self.choices: list[JSON] | None = None  # autocomplete answer
        self.modal: JSON | None = None  # the modal it was answered with
        self.modal_submitted = False
        self.acknowledged = False

    @property
    def response(self) -> RecordedCallback | None:
        """The accepted callback, if any."""
        return next((c for c in self.callbacks if c.status < 300), None)

    async def wait_response(self, timeout: float = 5) -> RecordedCallback:  # noqa: ASYNC109
        """Wait for the first callback attempt (accepted or refused) and return it."""
        await self._fake.wait_for(lambda: bool(self.callbacks), timeout)
        return self.callbacks[0]

    def metadata(self) -> JSON:
        out: JSON = {
            "id": str(self.id),
            "type": self.type,
            "user": user_payload(self._fake.users[self.user_id]),
            "authorizing_integration_owners": {"0": str(self.guild_id or 0)},
        }
        if self.type in (2, 4):
            out["name"] = self.name
            out["command_type"] = 1
        if self.original is not None:
            out["original_response_message_id"] = str(self.original.id)
        if self.component_message_id is not None:
            out["interacted_message_id"] = str(self.component_message_id)
        return out
