"""The ``[telegram]`` table: defaults, every problem at once, and the limits by bucket name."""

from __future__ import annotations

import pytest

from adapters.telegram.limits import TELEGRAM_LIMITS, route
from adapters.telegram.settings import SECRET_NAMES, read_settings, webhook_secret_ok
from bot.delivery.pacing import Window
from bot.errors import ConfigError


def test_defaults_poll_api_telegram_org() -> None:
    s = read_settings({})
    assert (s.api_base, s.mode, s.poll_timeout, s.admin_users) == (
        "https://api.telegram.org", "polling", 30, frozenset(),
    )  # fmt: skip
    assert SECRET_NAMES == ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET")


def test_every_problem_at_once_with_hints() -> None:
    with pytest.raises(ConfigError) as info:
        read_settings(
            {
                "mode": "webhok",
                "admin_user": [1],
                "admin_chats": ["-100", True],
                "poll_timeout": 0,
                "webhook_url": "http://x.example/hook",
                "limits": {"messages per group": [20]},
            }
        )
    assert info.value.problems == (
        "telegram: admin_user: unknown key (did you mean admin_users?)",
        "telegram: mode: must be 'polling' or 'webhook', not 'webhok'",
        "telegram: webhook_url: must be an https:// URL (Telegram calls only those)",
        "telegram: admin_chats[0]: '-100' is not a numeric Telegram id",
        "telegram: admin_chats[1]: True is not a numeric Telegram id",
        "telegram: poll_timeout: must be a number from 1 to 50",
        "telegram: limits: messages per group: must be [limit, seconds], e.g. [20, 60]",
    )
    with pytest.raises(ConfigError, match="webhook mode needs the public URL"):
        read_settings({"mode": "webhook"})


def test_a_webhook_and_limits_by_bucket_name() -> None:
    s = read_settings(
        {
            "mode": "webhook",
            "webhook_url": "https://bot.example.org/telegram/webhook",
            "admin_chats": [-1001500000001],
            "limits": {"messages per group": [10, 60]},
        }
    )
    limits = TELEGRAM_LIMITS.with_windows(s.windows)
    group = limits.buckets(route("sendMessage", -1001500000001))
    assert [(b.name, b.window) for b in group if b.name == "messages per group"] == [
        ("messages per group", Window(10, 60.0))
    ]
    assert [b.name for b in limits.buckets(route("sendPhoto", 5))] == [
        "messages per chat", "messages",
    ]  # fmt: skip
    assert webhook_secret_ok("abc_DEF-123")
    assert not webhook_secret_ok("has space")
