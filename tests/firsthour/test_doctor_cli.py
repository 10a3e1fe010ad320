"""``tallybot doctor --config FILE`` from the command line: one line per problem with its fix,
exit 1 when there is any, 0 when none; a platform without checks says so; a channel subscribed
on a platform the configuration does not enable is a problem."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.domain.subscription import ChannelRef, Platform, Wants
from bot.runtime.cli import main
from tests.adapters.test_doctor import subscribe, write_config

pytestmark = pytest.mark.timeout(60)


def test_a_console_bot_with_nothing_subscribed_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, {"console": {"enabled": True}})
    code = main(["doctor", "--config", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == "console: no checks for this platform"
    assert out[-1].startswith(f"{path}: no problem found")


def test_a_channel_on_a_platform_not_enabled_is_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path, {"console": {"enabled": True}})
    chat = ChannelRef(Platform("telegram"), "-1001500000001", "-1001500000001")
    asyncio.run(subscribe(path, {}, (chat, Wants())))
    code = main(["doctor", "--config", str(path)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out[0] == (
        f"{chat}: subscribed to bessemer-2021 but [telegram] is not enabled; fix: enable "
        "[telegram] in the configuration, or unsubscribe the channel"
    )
