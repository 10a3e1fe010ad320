"""The ``[telegram]`` table and the secrets the Telegram adapter reads.

    [telegram]
    api_base = "https://api.telegram.org"   # a local Bot API server, or a test's fake
    mode = "polling"                        # or "webhook"
    webhook_path = "/telegram/webhook"      # webhook mode: the route on the ops server
    webhook_url = "https://bot.example.org/telegram/webhook"   # webhook mode: what Telegram calls
    admin_users = [123456789]               # admins everywhere (Telegram user ids)
    admin_chats = [-1001500000001]          # chats whose own admins count as tallybot admins
    poll_timeout = 30                       # long polling: seconds a getUpdates call waits
    admin_cache_seconds = 60                # how long a getChatMember answer is trusted
    probe_window = 50                       # exactly once: most ids probed after a lost answer

    [telegram.limits]                       # a bucket's window by name (adapters.telegram.limits)
    "messages per group" = [20, 60]

Secrets never come from the file: ``TELEGRAM_BOT_TOKEN`` (always) and
``TELEGRAM_WEBHOOK_SECRET`` (webhook mode: Telegram sends it back in
``X-Telegram-Bot-Api-Secret-Token``), from the environment or ``NAME_FILE``.

The table is checked with the rest of the file (:mod:`bot.settings`): every problem at once,
``FILE: telegram.KEY: PROBLEM``, with a did-you-mean for a misspelt key.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, Field, PlainValidator, model_validator

from bot.platform import (
    LISTS,
    HttpUrl,
    Loc,
    PlatformTable,
    Text,
    bad,
    between,
    describe,
    one_of,
    problems,
    whole_between,
)
from bot.platform import LimitsSetting as Limits

BOT_TOKEN = "TELEGRAM_BOT_TOKEN"
WEBHOOK_SECRET = "TELEGRAM_WEBHOOK_SECRET"
SECRET_NAMES = (BOT_TOKEN, WEBHOOK_SECRET)
"""Every secret the adapter may read, for the scrubbing of logs."""
SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What Telegram accepts as a webhook's ``secret_token``."""

Mode = Literal["polling", "webhook"]


def _ids(value: object) -> frozenset[int]:
    if not isinstance(value, LISTS):
        raise bad(f"expected a list of numeric ids, got {describe(value)}")
    found: list[tuple[Loc, str]] = [
        ((i,), f"{item!r} is not a numeric Telegram id")
        for i, item in enumerate(value)
        if isinstance(item, bool) or not isinstance(item, int)
    ]
    problems("ids", found)
    return frozenset(value)


def _path(value: str) -> str:
    if not value.startswith("/"):
        raise bad(f"must be a path starting with /, got {describe(value)}")
    return value


def _https(value: str) -> str:
    if not value.startswith("https://"):
        raise bad("must be an https:// URL (Telegram calls only those)")
    return value


TelegramIds = Annotated[frozenset[int], PlainValidator(_ids)]


class TelegramSettings(PlatformTable):
    api_base: Annotated[HttpUrl, AfterValidator(lambda url: url.rstrip("/"))] = (
        "https://api.telegram.org"
    )
    mode: Annotated[Mode, one_of(["polling", "webhook"], "mode")] = "polling"
    webhook_path: Annotated[Text, AfterValidator(_path)] = "/telegram/webhook"
    webhook_url: Annotated[Text, AfterValidator(_https)] | None = None
    admin_users: TelegramIds = frozenset()
    admin_chats: TelegramIds = frozenset()
    poll_timeout: Annotated[int, whole_between(1, 50)] = 30
    admin_cache_seconds: Annotated[float, between(0, 3600, " seconds")] = 60.0
    probe_window: Annotated[int, whole_between(1, 1000)] = 50
    limits: Limits = Field(default_factory=dict)
    """``[telegram.limits]``: buckets of ``adapters.telegram.limits`` changed by name."""

    @model_validator(mode="after")
    def _webhook(self) -> TelegramSettings:
        if self.mode == "webhook" and self.webhook_url is None:
            problems(
                "telegram",
                [(("webhook_url",), "webhook mode needs the public URL Telegram calls")],
            )
        return self


def webhook_secret_ok(value: str) -> bool:
    """Whether ``value`` is a ``secret_token`` Telegram accepts (1-256 of ``A-Za-z0-9_-``)."""
    return SECRET_TOKEN.fullmatch(value) is not None
