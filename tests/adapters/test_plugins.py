"""Platforms are plug-ins (``bot.platform``): found through the ``tallybot.adapters`` entry
points, their tables read by their own readers, their secrets checked, and their admins decided
by their own policy, which denies by default."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.console.plugin import PLUGIN as CONSOLE
from bot.delivery.adapter import Adapter, Earlier
from bot.delivery.pacing import Pace, unpaced
from bot.domain.message import Attachment, Outgoing
from bot.domain.subscription import ChannelRef, Platform
from bot.errors import ConfigError
from bot.platform import (
    GROUP,
    AdminPolicy,
    Asker,
    Context,
    PlatformTable,
    Plugin,
    Plugins,
    SecretNeed,
    Verdict,
)
from bot.runtime.app import App
from bot.runtime.plugins import adapter_factories
from bot.runtime.preflight import check
from bot.settings.loader import parse
from bot.settings.values import Ids
from bot.store import audit as audit_rows
from bot.testing.clock import FakeClock

COUNT = {
    "id": "bessemer-2021",
    "title": "Bessemer",
    "choices": [{"id": "yes"}, {"id": "no"}],
    "source": {"kind": "manual"},
    "public": True,  # seen on every platform, the pager too (it names no place of its own)
}


# ---------------------------------------------------------------- a platform of the tests


class PagerSettings(PlatformTable):
    admins: Ids = frozenset()


class PagerAdapter(Adapter):
    """A platform with nothing to connect to: it only takes commands (``ask``)."""

    platform = Platform("pager")

    def __init__(self, settings: PagerSettings, context: Context) -> None:
        self.context = context

    async def ask(self, user: str, text: str) -> str:
        channel = ChannelRef(self.platform, "w1", "c1")
        reply = await self.context.handle(self.context.request(channel, user, user, text))
        return reply.text

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        return key

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        return None

    async def find_posted(
        self, channel: ChannelRef, keys: Collection[str], *, since: datetime, pace: Pace = unpaced
    ) -> dict[str, Earlier]:
        return {}


class PagerAdmins(AdminPolicy):
    def __init__(self, settings: PagerSettings) -> None:
        self.admins = settings.admins

    def verdict(self, asker: Asker) -> Verdict:
        return Verdict(asker.user_id in self.admins)


def pager(**kw: Any) -> Plugin[PagerSettings]:
    """The pager platform: ``[pager] admins``; with no ``admins=`` policy unless given."""
    return Plugin(name="pager", settings=PagerSettings, build=PagerAdapter, **kw)


def pager_config(tmp_path: Path, plugin: Plugin[Any], **table: Any) -> Any:
    raw = {
        "store": {"url": f"sqlite+aiosqlite:///{tmp_path / 'tallybot.sqlite3'}"},
        "pager": table,
        "counts": [COUNT],
    }
    return parse(raw, tmp_path / "t.toml", plugins=Plugins([plugin]))


async def ask_as(tmp_path: Path, plugin: Plugin[Any], user: str, text: str, **table: Any) -> str:
    cfg = pager_config(tmp_path, plugin, **table)
    async with App(cfg, adapter_factories(cfg, env={}), clock=FakeClock(), poll=False) as app:
        adapter = app.adapters[Platform("pager")]
        assert isinstance(adapter, PagerAdapter)
        return await adapter.ask(user, text)


# ------------------------------------------------------------------------------ registry


def test_the_installed_platforms_are_found_through_their_entry_points() -> None:
    installed = Plugins.installed()
    assert list(installed) == ["console", "discord", "slack", "telegram", "webhook"]
    for name, plugin in installed.items():
        assert isinstance(plugin, Plugin)
        assert plugin.name == name
    assert set(installed.secret_names()) >= {
        "DISCORD_TOKEN",
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
        "TELEGRAM_BOT_TOKEN",
        "TELEGRAM_WEBHOOK_SECRET",
    }
    assert GROUP == "tallybot.adapters"


@pytest.mark.slow  # a real Python process
def test_finding_the_platforms_loads_no_platform_library() -> None:
    """The plug-ins are light: discord.py and slack-bolt load when an adapter is built."""
    script = (
        "import sys\nfrom bot.platform import Plugins\nPlugins.installed()\n"
        "print(sorted(m for m in ('discord', 'slack_bolt', 'slack_sdk') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_an_unknown_platform_table_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    with pytest.raises(ConfigError) as typo:
        parse({"discrod": {"guilds": [1]}, "counts": [COUNT]}, path)
    assert typo.value.problems == (f"{path}: discrod: unknown key (did you mean 'discord'?)",)
    with pytest.raises(ConfigError) as unknown:
        parse({"matrix": {}, "counts": [COUNT]}, path)
    (problem,) = unknown.value.problems
    assert problem.startswith(f"{path}: matrix: unknown key; known keys: ")
    assert problem.endswith("console, discord, slack, telegram, webhook")
    with pytest.raises(ConfigError, match=r"alerts\[0\]: no platform 'slak' is installed \(did "):
        parse({"admins": {"alerts": ["slak:T1/C1"]}, "counts": [COUNT]}, path)


def test_a_platform_registered_explicitly_is_read_and_built(tmp_path: Path) -> None:
    cfg = pager_config(tmp_path, pager(admins=PagerAdmins), admins=["ana"])
    assert cfg.settings("pager") == PagerSettings(admins=frozenset({"ana"}))
    with pytest.raises(ConfigError, match=r"pager.admin: unknown key \(did you mean 'admins'"):
        pager_config(tmp_path, pager(), admin=["ana"])
    # The installed platforms are not known to a configuration read without them.
    with pytest.raises(ConfigError, match="discord: unknown key"):
        parse({"discord": {}}, tmp_path / "t.toml", plugins=Plugins([pager()]))
    with pytest.raises(ConfigError, match="two platforms are registered as 'pager'"):
        Plugins([pager(), pager()])


def test_the_old_admin_keys_name_their_new_place(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    raw = {
        "admins": {
            "discord_users": ["1"],
            "slack_workspaces": ["T1"],
            "console": False,
            "alerts": ["console:local/console"],
        },
        "counts": [COUNT],
    }
    with pytest.raises(ConfigError) as moved:
        parse(raw, path)
    assert moved.value.problems == tuple(
        f"{path}: admins.{old}: no longer here (did you mean [{table}] {new}? each platform's "
        "admins are set in its own table)"
        for old, table, new in (
            ("discord_users", "discord", "admin_users"),
            ("slack_workspaces", "slack", "admin_workspaces"),
            ("console", "console", "admin"),
        )
    )


def test_preflight_checks_the_secrets_of_enabled_platforms_only(tmp_path: Path) -> None:
    def needs(settings: PagerSettings) -> tuple[SecretNeed, ...]:
        return (SecretNeed("PAGER_TOKEN"), SecretNeed("PAGER_EXTRA", required=False))

    plugin = pager(secrets=needs)
    cfg = pager_config(tmp_path, plugin)
    with pytest.raises(ConfigError, match=r"t.toml: pager: PAGER_TOKEN is not set"):
        check(cfg, env={})
    check(cfg, env={"PAGER_TOKEN": "a-token-long-enough"})
    off = parse({"counts": [COUNT], "console": {"enabled": True}}, tmp_path / "t.toml")
    check(off, env={})  # no Discord, no Slack: none of their tokens is asked for
    factories = adapter_factories(cfg, env={"PAGER_TOKEN": "a-token-long-enough"})
    assert set(factories) == {"pager"}


# -------------------------------------------------------------------------------- admins


async def test_a_platform_without_an_admin_policy_has_no_admins(tmp_path: Path) -> None:
    """Deny by default: the plug-in forgot its policy, so nobody is an admin (not everyone)."""
    plugin = pager()  # no admins=
    refused = await ask_as(tmp_path, plugin, "ana", "pause bessemer-2021", admins=["ana"])
    assert refused == "Error: only admins can pause a count; ask an admin of this workspace"
    assert (await ask_as(tmp_path, plugin, "bo", "status bessemer-2021")).startswith("Bessemer")


async def test_a_platform_policy_decides_and_refusals_are_audited(tmp_path: Path) -> None:
    plugin = pager(admins=PagerAdmins, place="pager network")
    cfg = pager_config(tmp_path, plugin, admins=["ana"])
    async with App(cfg, adapter_factories(cfg, env={}), clock=FakeClock(), poll=False) as app:
        adapter = app.adapters[Platform("pager")]
        assert isinstance(adapter, PagerAdapter)
        allowed = await adapter.ask("ana", "update bessemer-2021 yes=1 no=2")
        refused = await adapter.ask("bo", "pause bessemer-2021")
        async with app.db.connect() as conn:
            audit = await audit_rows.recent(conn)
    assert allowed.startswith("Accepted update #1 for bessemer-2021")
    assert refused == "Error: only admins can pause a count; ask an admin of this pager network"
    assert [(a.actor, a.action, a.allowed, a.detail) for a in reversed(audit)] == [
        ("pager:ana (ana)", "update", True, "accepted"),
        ("pager:bo (bo)", "pause", False, "refused: not an admin"),
    ]


def test_the_console_admin_switch_is_its_policy() -> None:
    asker = Asker("console", "local")
    on = CONSOLE.settings.model_validate({"enabled": True})
    off = CONSOLE.settings.model_validate({"enabled": True, "admin": False})
    assert on.on()
    assert not CONSOLE.settings.model_validate({"admin": True}).on()
    assert CONSOLE.admins(on).verdict(asker).admin
    assert CONSOLE.admins(on).verdict(asker) == Verdict(True, tenant_admin=True, home=True)
    assert CONSOLE.admins(off).verdict(asker) == Verdict(
        False, "refused: [console] admin = false", home=True
    )
    assert AdminPolicy().verdict(asker) == Verdict(False, "refused: not an admin")


def test_the_core_imports_no_platform() -> None:
    """bot/ imports no adapter: every platform is reached through its plug-in, the console too
    (the demo and replays drive it through ``Plugin.terminal``)."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for path in sorted((root / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [
                (path.relative_to(root).as_posix(), n) for n in names if n.startswith("adapters")
            ]
    assert found == []


def test_a_secret_written_in_a_platform_table_is_refused_and_never_repeated(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.toml"
    value = "xoxb-0123456789-abcdefghij"
    with pytest.raises(ConfigError) as caught:
        parse({"slack": {"bot_token": value}, "discord": {"token": value}}, path)
    assert caught.value.problems == tuple(
        f"{path}: {key}: unknown key: secrets never go in the file; they are read from the "
        "environment, or from a file named by NAME_FILE (see tallybot.env.example)"
        for key in ("slack.bot_token", "discord.token")
    )
    assert value not in str(caught.value)
