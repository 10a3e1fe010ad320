"""What the fake records: every request with its answer, every 429, every webhook delivery."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# One notifier for all the fakes (until bot/testing holds their shared parts).
from tests.fakes.loopback.notify import ChangeNotifier

JSON = dict[str, Any]

__all__ = ["ChangeNotifier", "RateLimitHit", "RecordedRequest", "WebhookDelivery"]


@dataclass
class RecordedRequest:
    """One Bot API request as the fake saw and answered it (also those it refused)."""

    method: str
    """The method as Telegram names it ("sendMessage"), whatever case the client used."""
    args: JSON
    """The parameters; an uploaded file shows as {"filename", "size", "sha256"}."""
    http_verb: str
    content_type: str
    time: float
    """When it arrived, by the fake's clock."""
    status: int
    response: JSON
    """The answer sent, or the one that would have been sent when ``lost``."""
    lost: bool = False
    """The connection was dropped instead of answering (see ``FakeTelegram.lose_answer``)."""
    executed: bool = True
    """False when a failure rule refused it before it took effect."""

    @property
    def ok(self) -> bool:
        return self.status == 200 and bool(self.response.get("ok"))

    @property
    def description(self) -> str | None:
        value = self.response.get("description")
        return value if isinstance(value, str) else None

    @property
    def chat_id(self) -> int | str | None:
        value = self.args.get("chat_id")
        return value if isinstance(value, int | str) else None

    @property
    def text(self) -> str | None:
        return self._str("text")

    @property
    def caption(self) -> str | None:
        return self._str("caption")

    @property
    def parse_mode(self) -> str | None:
        return self._str("parse_mode")

    @property
    def reply_markup(self) -> JSON | None:
        value = self.args.get("reply_markup")
        return value if isinstance(value, dict) else None

    @property
    def photo_sha256(self) -> str | None:
        photo = self.args.get("photo")
        return photo.get("sha256") if isinstance(photo, dict) else None

    @property
    def message_id(self) -> int | None:
        """The message_id in a successful answer that is a Message."""
        result = self.response.get("result")
        return result.get("message_id") if isinstance(result, dict) else None

    def _str(self, name: str) -> str | None:
        value = self.args.get(name)
        return value if isinstance(value, str) else None


@dataclass
class RateLimitHit:
    """A 429 the fake answered."""

    method: str
    chat_id: int | None
    scope: str
    """"overall", "chat", "group", "group_edit", or "injected" (``fail_next``)."""
    wait: float
    """The honest wait in seconds."""
    retry_after: int
    """What the answer announced."""
    time: float


@dataclass
class WebhookDelivery:
    """One POST of an update to the bot's webhook."""

    update_id: int
    url: str
    body: JSON
    secret_token: str | None
    """The X-Telegram-Bot-Api-Secret-Token header sent (None: not sent)."""
    time: float
    status: int | None = None
    """The webhook's HTTP status (None: no answer)."""
    error: str | None = None
    reply: bytes = field(default=b"", repr=False)
    """The webhook's answer body; a method call in it is executed like a request."""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300
