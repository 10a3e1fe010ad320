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

``read_settings`` checks the whole table and reports every problem at once, one line each
(``telegram: KEY: PROBLEM``), with a did-you-mean for a misspelt key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Literal

from bot.delivery.pacing import Window
from bot.errors import ConfigError

BOT_TOKEN = "TELEGRAM_BOT_TOKEN"
WEBHOOK_SECRET = "TELEGRAM_WEBHOOK_SECRET"
SECRET_NAMES = (BOT_TOKEN, WEBHOOK_SECRET)
"""Every secret the adapter may read, for the scrubbing of logs."""
SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
"""What Telegram accepts as a webhook's ``secret_token``."""

Mode = Literal["polling", "webhook"]


@dataclass(frozen=True, slots=True)
class TelegramSettings:
    api_base: str = "https://api.telegram.org"
    mode: Mode = "polling"
    webhook_path: str = "/telegram/webhook"
    webhook_url: str | None = None
    admin_users: frozenset[int] = frozenset()
    admin_chats: frozenset[int] = frozenset()
    poll_timeout: int = 30
    admin_cache_seconds: float = 60.0
    probe_window: int = 50
    limits: tuple[tuple[str, Window], ...] = ()

    @property
    def windows(self) -> dict[str, Window]:
        """``[telegram.limits]`` for ``Limits.with_windows``."""
        return dict(self.limits)


KEYS = tuple(f.name for f in fields(TelegramSettings))


def _ids(key: str, value: object, problems: list[str]) -> frozenset[int]:
    if not isinstance(value, list):
        problems.append(f"telegram: {key}: must be a list of numeric ids")
        return frozenset()
    out: set[int] = set()
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int):
            problems.append(f"telegram: {key}[{i}]: {item!r} is not a numeric Telegram id")
        else:
            out.add(item)
    return frozenset(out)


def _number(key: str, value: object, low: float, high: float, problems: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        problems.append(f"telegram: {key}: must be a number from {low:g} to {high:g}")
        return low
    return float(value)


def _limits(value: object, problems: list[str]) -> tuple[tuple[str, Window], ...]:
    if not isinstance(value, dict):
        problems.append("telegram: limits: must be a table of bucket = [limit, seconds]")
        return ()
    out: list[tuple[str, Window]] = []
    for name, pair in value.items():
        ok = (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(x, int | float) and not isinstance(x, bool) for x in pair)
            and int(pair[0]) == pair[0] >= 1
            and pair[1] > 0
        )
        if not ok:
            problems.append(f"telegram: limits: {name}: must be [limit, seconds], e.g. [20, 60]")
            continue
        out.append((str(name), Window(int(pair[0]), float(pair[1]))))
    return tuple(out)


def read_settings(table: Mapping[str, object]) -> TelegramSettings:
    """The settings from the ``[telegram]`` table; :class:`ConfigError` listing every problem."""
    problems: list[str] = []
    for key in table:
        if key not in KEYS:
            close = difflib.get_close_matches(key, KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"telegram: {key}: unknown key{hint}")
    d = TelegramSettings()
    api_base = table.get("api_base", d.api_base)
    if not isinstance(api_base, str) or not api_base.startswith(("https://", "http://")):
        problems.append("telegram: api_base: must be an http(s) URL")
        api_base = d.api_base
    mode = table.get("mode", d.mode)
    if mode not in ("polling", "webhook"):
        problems.append(f"telegram: mode: must be 'polling' or 'webhook', not {mode!r}")
        mode = d.mode
    path = table.get("webhook_path", d.webhook_path)
    if not isinstance(path, str) or not path.startswith("/"):
        problems.append("telegram: webhook_path: must be a path starting with /")
        path = d.webhook_path
    url = table.get("webhook_url")
    if url is not None and (not isinstance(url, str) or not url.startswith("https://")):
        problems.append(
            "telegram: webhook_url: must be an https:// URL (Telegram calls only those)"
        )
        url = None
    if mode == "webhook" and url is None and "webhook_url" not in table:
        problems.append("telegram: webhook_url: webhook mode needs the public URL Telegram calls")
    settings = TelegramSettings(
        api_base=str(api_base).rstrip("/"),
        mode="webhook" if mode == "webhook" else "polling",
        webhook_path=str(path),
        webhook_url=url if isinstance(url, str) else None,
        admin_users=_ids("admin_users", table.get("admin_users", []), problems),
        admin_chats=_ids("admin_chats", table.get("admin_chats", []), problems),
        poll_timeout=int(_number("poll_timeout", table.get("poll_timeout", 30), 1, 50, problems)),
        admin_cache_seconds=_number(
            "admin_cache_seconds", table.get("admin_cache_seconds", 60), 0, 3600, problems
        ),
        probe_window=int(_number("probe_window", table.get("probe_window", 50), 1, 1000, problems)),
        limits=_limits(table.get("limits", {}), problems),
    )
    if problems:
        raise ConfigError.of(problems)
    return settings


def webhook_secret_ok(value: str) -> bool:
    """Whether ``value`` is a ``secret_token`` Telegram accepts (1-256 of ``A-Za-z0-9_-``)."""
    return SECRET_TOKEN.fullmatch(value) is not None
