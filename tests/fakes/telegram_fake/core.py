"""The state every method handler shares: world, clock, flood control and the records."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import markup
from .args import Args
from .entities import Entity, sort_entities, utf16_len
from .errors import bad_request, too_many_requests
from .limits import CALLBACK_DATA_LIMIT, FloodControl, FloodLimits
from .records import ChangeNotifier, RateLimitHit, RecordedRequest
from .world import JSON, Chat, StoredMessage, User, World

Clock = Callable[[], float]


@dataclass
class CallbackQuery:
    id: str
    user_id: int
    data: str
    sent_at: float
    answers: list[JSON] = field(default_factory=list)
    """Every answerCallbackQuery accepted for it (at most one)."""


@dataclass
class StoredPhoto:
    data: bytes = field(repr=False)
    sizes: list[JSON]
    sha256: str


class Core:
    def __init__(
        self,
        *,
        bot: User,
        clock: Clock | None,
        limits: FloodLimits,
        privacy_mode: bool,
    ) -> None:
        self.clock: Clock = clock or time.monotonic
        self.epoch = time.time() - self.clock()
        """Unix time = epoch + clock(): message dates move with an injected clock."""
        self.world = World(bot)
        self.flood = FloodControl(limits, self.clock)
        self.privacy_mode = privacy_mode
        self.photos: dict[str, StoredPhoto] = {}
        self.requests: list[RecordedRequest] = []
        self.rate_limited: list[RateLimitHit] = []
        self.notifier = ChangeNotifier()
        self.bugs: list[BaseException] = []
        """Exceptions inside the fake itself: raised again when it stops."""
        self.callback_queries: dict[str, CallbackQuery] = {}
        self.callback_answer_window_s = 15.0
        self.commands: dict[tuple[str, int | None, int | None, str], list[JSON]] = {}
        """setMyCommands by (scope type, chat id, user id, language code)."""

    @property
    def bot(self) -> User:
        return self.world.bot

    def unix_now(self) -> int:
        return int(self.epoch + self.clock())

    # ------------------------------------------------------------ flood control

    def admit(self, kind: str, chat: Chat, method: str) -> None:
        """Count a send/edit against the limits, or answer 429 (and record it)."""
        throttled = self.flood.admit("send" if kind == "send" else "edit", chat.id, chat.is_group)
        if throttled is None:
            return
        hit = RateLimitHit(
            method, chat.id, throttled.scope, throttled.wait, throttled.retry_after, self.clock()
        )
        self.rate_limited.append(hit)
        raise too_many_requests(throttled.retry_after)

    # ------------------------------------------------------------ messages

    def store(
        self, chat: Chat, sender_id: int | None, source: str, **content: Any
    ) -> StoredMessage:
        message = StoredMessage(
            chat_id=chat.id,
            message_id=self.world.next_message_id(chat),
            sender_id=sender_id,
            date=self.unix_now(),
            sent_at=self.clock(),
            source=source,
            **content,
        )
        chat.messages[message.message_id] = message
        self.notifier.notify()
        return message

    def is_own(self, message: StoredMessage) -> bool:
        return message.source in ("sendMessage", "sendPhoto")

    def formatted(
        self, args: Args, field_name: str, entities_name: str, limit: int, too_long: str
    ) -> tuple[str, list[Entity]]:
        """Parse text or caption by parse_mode (or explicit entities) and check its length."""
        raw = args.text(field_name) or ""
        explicit = args.obj(entities_name)
        if explicit is not None:
            plain, entities = raw, _checked_entities(explicit, raw)
        else:
            plain, entities = markup.parse(raw, args.text("parse_mode"))
        if len(plain) > limit:
            raise bad_request(too_long)
        return plain, markup.detect(plain, entities)

    def reply_markup(self, args: Args) -> JSON | None:
        """An inline keyboard (kept on the message) or None; other keyboards are accepted."""
        value = args.obj("reply_markup")
        if value is None:
            return None
        if not isinstance(value, dict):
            raise bad_request("can't parse reply keyboard markup JSON object")
        rows = value.get("inline_keyboard")
        if rows is None:
            if {"keyboard", "remove_keyboard", "force_reply"} & value.keys():
                return None
            raise bad_request("can't parse reply keyboard markup JSON object")
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise bad_request("can't parse inline keyboard button: field \"inline_keyboard\" "
                              "must be an Array of Arrays")  # fmt: skip
        for button in (b for row in rows for b in row):
            if not isinstance(button, dict) or not button.get("text"):
                raise bad_request("can't parse inline keyboard button: Text buttons are unallowed "
                                  "in the inline keyboard")  # fmt: skip
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= CALLBACK_DATA_LIMIT:
                raise bad_request("BUTTON_DATA_INVALID")
            url = button.get("url")
            if url is not None and not str(url).startswith(("http://", "https://", "tg://")):
                raise bad_request("BUTTON_URL_INVALID")
        return value


def _checked_entities(value: Any, text: str) -> list[Entity]:
    if not isinstance(value, list):
        raise bad_request("can't parse entities JSON object")
    size = utf16_len(text)
    out: list[Entity] = []
    for entity in value:
        if not isinstance(entity, dict) or not isinstance(entity.get("type"), str):
            raise bad_request("can't parse entities JSON object")
        offset, length = entity.get("offset"), entity.get("length")
        if not isinstance(offset, int) or not isinstance(length, int) or offset < 0:
            raise bad_request("can't parse entities JSON object")
        if length > 0 and offset + length <= size:
            out.append(dict(entity))
    return sort_entities(out)
