"""What the REST and interaction routes read and change of the fake (``server.FakeDiscord``).

A Protocol, as ``gateway.FakeDiscord`` is, so that the routes do not import the server that
imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tests.fakes.loopback.hangs import Hangs

from .gateway import GatewayHub
from .interaction import FakeInteraction
from .limits import RateLimits
from .models import (
    JSON,
    Channel,
    Failure,
    Guild,
    RecordedMessage,
    RecordedRequest,
    Snowflakes,
    User,
    Webhook,
)


class FakeDiscord(Protocol):
    """The fake's state as the routes see it."""

    token: str
    clock: Callable[[], float]
    snowflakes: Snowflakes
    limits: RateLimits
    gateway: GatewayHub
    app_id: int
    bot_user_id: int
    owner_user_id: int
    attachment_size_limit: int
    privileged_intents: int
    bot_role_permissions: int
    recommended_shards: int
    max_concurrency: int
    nonce_window_s: float
    interaction_deadline_s: float
    users: dict[int, User]
    guilds: dict[int, Guild]
    channels: dict[int, Channel]
    webhooks: dict[int, Webhook]
    publish_limit: int
    publish_window_s: float
    _messages: dict[int, RecordedMessage]
    requests: list[RecordedRequest]
    request_count: int
    record: bool
    count_429: int
    count_invalid: int
    hangs: Hangs
    registered_commands: dict[int | None, list[JSON]]
    interactions: list[FakeInteraction]
    internal_errors: list[Exception]

    @property
    def gateway_url(self) -> str: ...

    def notify(self) -> None: ...

    async def wait_for(self, predicate: Callable[[], bool], timeout: float = 5) -> None: ...  # noqa: ASYNC109

    def wall_time(self) -> float: ...

    def bucket_limits(self, kind: str) -> tuple[int, float]: ...

    def take_failure(self, method: str, path: str, *, after_commit: bool) -> Failure | None: ...

    def messages(
        self, channel_id: int, *, include_deleted: bool = True
    ) -> list[RecordedMessage]: ...

    def message(self, message_id: int) -> RecordedMessage: ...

    def bot_permissions(self, channel_id: int) -> int: ...

    def dm_channel(self, user_id: int) -> int: ...

    def shares_a_server(self, user_id: int) -> bool: ...

    def store_message(self, msg: RecordedMessage) -> None: ...

    def message_json(self, msg: RecordedMessage, *, gateway: bool = False) -> JSON: ...
