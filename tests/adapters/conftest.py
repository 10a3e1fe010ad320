"""Fixtures for adapter tests: no proxy, no Slack credentials leaking in from the environment."""

from __future__ import annotations

import pytest

PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
SLACK_VARS = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # slack_sdk sends loopback traffic to HTTP(S)_PROXY and ignores NO_PROXY; bolt reads
    # SLACK_SIGNING_SECRET & co. from the environment when not given one.
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in SLACK_VARS:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(f"{name}_FILE", raising=False)
