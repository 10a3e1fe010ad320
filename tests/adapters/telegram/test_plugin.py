"""Telegram as a plug-in: found through its entry point, ``[telegram]`` read with every problem
as ``FILE: telegram.KEY: PROBLEM``, its secrets by mode, its admin policy denying by default."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.telegram.plugin import PLUGIN
from adapters.telegram.settings import TelegramSettings
from bot.errors import ConfigError
from bot.platform import Asker, Plugins
from bot.settings.loader import parse
from bot.settings.secrets import Secret
from tests.helpers import bare_context

STORE = {"url": "sqlite+aiosqlite:///unused.sqlite3"}


def test_the_entry_point_is_the_plugin() -> None:
    assert Plugins.installed()["telegram"] is PLUGIN
    assert PLUGIN.place == "chat"
    assert PLUGIN.channel_example.startswith("telegram:-100")


def test_every_problem_of_the_table_is_reported_at_once(tmp_path: Path) -> None:
    path = tmp_path / "tallybot.toml"
    table = {"mode": "webhok", "admin_user": [1], "poll_timeout": 99}
    with pytest.raises(ConfigError) as caught:
        parse({"store": STORE, "telegram": table}, path)
    assert caught.value.problems == (  # in the order of the file
        f"{path}: telegram.mode: unknown mode \"webhok\" (text) (did you mean 'webhook'?); "
        "one of polling, webhook",
        f"{path}: telegram.admin_user: unknown key (did you mean 'admin_users'?)",
        f"{path}: telegram.poll_timeout: must be a whole number from 1 to 50, got 99 (an integer)",
    )


@pytest.mark.parametrize(("mode", "webhook_required"), [("polling", False), ("webhook", True)])
def test_the_webhook_secret_is_required_in_webhook_mode_only(
    tmp_path: Path, mode: str, webhook_required: bool
) -> None:
    table = {"mode": mode, "webhook_url": "https://bot.example.org/telegram/webhook"}
    cfg = parse({"store": STORE, "telegram": table}, tmp_path / "tallybot.toml")
    settings = cfg.settings("telegram")
    assert isinstance(settings, TelegramSettings)
    needs = {s.name: s.required for s in PLUGIN.secrets(settings)}
    assert needs == {"TELEGRAM_BOT_TOKEN": True, "TELEGRAM_WEBHOOK_SECRET": webhook_required}


def test_a_telegram_admin_counts_only_in_a_listed_chat() -> None:
    policy = PLUGIN.admins(TelegramSettings(admin_chats=frozenset({-1001})))
    assert policy.verdict(Asker("7", "-1001", platform_admin=True)).admin
    elsewhere = policy.verdict(Asker("7", "-1002", platform_admin=True))
    assert not elsewhere.admin
    assert "admin_chats" in elsewhere.refusal
    assert not policy.verdict(Asker("7", "-1001")).admin


def test_webhook_mode_without_the_ops_server_is_refused() -> None:
    settings = TelegramSettings(mode="webhook", webhook_url="https://bot.example.org/hook")
    secrets = {
        name: Secret(name, "1:x") for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET")
    }
    with pytest.raises(ConfigError, match=r"webhook mode needs the ops server \(\[server\]\)"):
        PLUGIN.build(settings, bare_context(secrets=secrets))
