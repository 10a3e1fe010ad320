"""``tallybot invite``: the install URL asks for the bot's scopes and exactly the permissions it
needs, checked bit by bit against discord.py's own permission flags."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import discord
import pytest

from adapters.discord.invite import NEEDED, SCOPES, Permission, invite_url, permissions
from bot.cli import main

APP_ID = "812345678901234567"


def test_each_flag_is_discords_bit() -> None:
    for flag in Permission:
        assert flag.name is not None
        assert discord.Permissions(**{flag.name.lower(): True}).value == flag.value, flag


def test_the_permission_integer_is_the_needed_flags_and_nothing_else() -> None:
    expected = discord.Permissions(
        view_channel=True,
        send_messages=True,
        send_messages_in_threads=True,
        embed_links=True,
        attach_files=True,
        read_message_history=True,
        create_public_threads=True,  # a subscription's thread
        pin_messages=True,  # a subscription's pin
    )
    assert permissions() == expected.value == 2_252_109_051_448_320
    assert permissions().bit_count() == len(NEEDED) == 8
    assert not discord.Permissions(permissions()).administrator
    assert not discord.Permissions(permissions()).manage_messages


def test_invite_url() -> None:
    url = invite_url(APP_ID)
    assert url == (
        f"https://discord.com/oauth2/authorize?client_id={APP_ID}"
        "&scope=bot+applications.commands&permissions=2252109051448320"
    )
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert query == {
        "client_id": [APP_ID],
        "scope": [" ".join(SCOPES)],
        "permissions": [str(permissions())],
    }


def test_cli_invite(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_APPLICATION_ID", raising=False)
    assert main(["invite", "--client-id", APP_ID]) == 0
    assert capsys.readouterr().out == invite_url(APP_ID) + "\n"
    assert main(["invite"]) == 2
    assert "give --client-id or set DISCORD_APPLICATION_ID" in capsys.readouterr().err
    monkeypatch.setenv("DISCORD_APPLICATION_ID", APP_ID)
    assert main(["invite"]) == 0
    assert f"client_id={APP_ID}&" in capsys.readouterr().out
    assert main(["invite", "--client-id", "my-bot"]) == 2
    assert "'my-bot' is not a Discord application id" in capsys.readouterr().err
