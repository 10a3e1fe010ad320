"""The ``[telegram]`` table: defaults, every problem at once, and the limits by bucket name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.telegram.limits import TELEGRAM_LIMITS, route
from adapters.telegram.settings import SECRET_NAMES, TelegramSettings, webhook_secret_ok
from bot.delivery.pacing import Window
from bot.errors import ConfigError
from bot.settings.loader import parse

PATH = Path("tallybot.toml")


def read(table: dict[str, Any]) -> TelegramSettings:
    settings = parse({"telegram": table}, PATH).settings("telegram")
    assert isinstance(settings, TelegramSettings)
    return settings


def test_defaults_poll_api_telegram_org() -> None:
    s = read({})
    assert (s.api_base, s.mode, s.poll_timeout, s.admin_users) == (
        "https://api.telegram.org", "polling", 30, frozenset(),
    )  # fmt: skip
    assert SECRET_NAMES == ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET")
    assert read({"api_base": "http://127.0.0.1:8081/"}).api_base == "http://127.0.0.1:8081"


def test_every_problem_at_once_with_hints_in_file_order() -> None:
    with pytest.raises(ConfigError) as info:
        read(
            {
                "mode": "webhok",
                "admin_user": [1],
                "admin_chats": ["-100", True],
                "poll_timeout": 0,
                "webhook_url": "http://x.example/hook",
                "limits": {"messages per group": [20]},
            }
        )
    assert info.value.problems == tuple(
        f"{PATH}: telegram.{problem}"
        for problem in (
            "mode: unknown mode \"webhok\" (text) (did you mean 'webhook'?); one of polling, "
            "webhook",
            "admin_user: unknown key (did you mean 'admin_users'?)",
            "admin_chats[0]: '-100' is not a numeric Telegram id",
            "admin_chats[1]: True is not a numeric Telegram id",
            "poll_timeout: must be a whole number from 1 to 50, got 0 (an integer)",
            "webhook_url: must be an https:// URL (Telegram calls only those)",
            'limits."messages per group": expected [requests, seconds], e.g. [50, 1.0]',
        )
    )
    with pytest.raises(ConfigError, match="webhook_url: webhook mode needs the public URL"):
        read({"mode": "webhook"})


def test_a_webhook_and_limits_by_bucket_name() -> None:
    s = read(
        {
            "mode": "webhook",
            "webhook_url": "https://bot.example.org/telegram/webhook",
            "admin_chats": [-1001500000001],
            "limits": {"messages per group": [10, 60]},
        }
    )
    limits = TELEGRAM_LIMITS.with_windows(s.limits)
    group = limits.buckets(route("sendMessage", -1001500000001))
    assert [(b.name, b.window) for b in group if b.name == "messages per group"] == [
        ("messages per group", Window(10, 60.0))
    ]
    assert [b.name for b in limits.buckets(route("sendPhoto", 5))] == [
        "messages per chat", "messages",
    ]  # fmt: skip
    assert webhook_secret_ok("abc_DEF-123")
    assert not webhook_secret_ok("has space")
