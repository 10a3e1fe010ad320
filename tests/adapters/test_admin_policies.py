"""Each platform's admin policy on its own: for the operator's counts, a platform's rights count
only where the operator lists them, and configured user ids everywhere; for a place's own
counts, the platform's rights there (``tenant_admin``), wherever it is. (Through the real clients:
test_discord_admins.py, test_slack_admins.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.discord.admins import DiscordAdmins
from adapters.discord.settings import DiscordSettings
from adapters.slack.admins import SlackAdmins
from adapters.slack.settings import SlackSettings
from bot.errors import ConfigError
from bot.platform import AdminPolicy, Asker
from bot.settings.loader import parse

DISCORD = DiscordAdmins(
    DiscordSettings.model_construct(  # "g1": a short stand-in for a server id, unchecked
        admin_users=frozenset({"42"}),
        admin_roles=frozenset({"Count admin"}),
        admin_guilds=frozenset({"g1"}),
    )
)
SLACK = SlackAdmins(
    SlackSettings(admin_users=frozenset({"U42"}), admin_workspaces=frozenset({"T1"}))
)


@pytest.mark.parametrize(
    ("policy", "where", "user_id", "rights", "admin", "tenant_admin"),
    [
        (DISCORD, "g1", "7", "platform", True, True),
        (DISCORD, "g1", "7", "role", True, False),  # a role: the operator's counts only
        (DISCORD, "g2", "7", "platform", False, True),  # the owner of another server: its own
        (DISCORD, "g2", "7", "role", False, False),  # a role of the same name there
        (DISCORD, "g2", "42", "", True, False),  # a configured user: everywhere
        (DISCORD, "@me", "7", "platform", False, False),
        (DISCORD, "g1", "7", "", False, False),
        (SLACK, "T1", "U7", "platform", True, True),
        (SLACK, "T2", "U7", "platform", False, True),
        (SLACK, "T2", "U42", "", True, False),
        (SLACK, "T1", "U7", "", False, False),
        (SLACK, "T1", "U7", "role", False, False),  # Slack has no roles
    ],
)
def test_platform_rights_count_only_where_listed(
    policy: AdminPolicy, where: str, user_id: str, rights: str, admin: bool, tenant_admin: bool
) -> None:
    asker = Asker(
        user_id,
        where,
        platform_admin=rights == "platform",
        roles=frozenset({"Count admin"}) if rights == "role" else frozenset(),
    )
    verdict = policy.verdict(asker)
    assert verdict.admin is admin
    assert verdict.tenant_admin is tenant_admin
    assert verdict.home is (where in ("g1", "T1"))
    if admin:
        return
    if rights == "platform" or (rights == "role" and policy is DISCORD):
        assert verdict.refusal == (
            "refused: Manage Server and admin roles count only in the servers listed in "
            f"[discord] admin_guilds, and {where} is not one"
            if policy is DISCORD
            else "refused: workspace admins count only in the workspaces listed in [slack] "
            f"admin_workspaces, and {where} is not one"
        )
    else:
        assert verdict.refusal == "refused: not an admin"


def test_slack_workspace_admins_can_be_turned_off() -> None:
    off = SlackAdmins(SlackSettings(admin_workspaces=frozenset({"T1"}), workspace_admins=False))
    assert not off.verdict(Asker("U7", "T1", platform_admin=True)).admin
    assert not off.asks_platform("U7")  # no users.info needed then
    assert SLACK.asks_platform("U7")
    assert SLACK.asks_platform("U42")  # an admin of the operator's counts, and maybe here


def test_the_places_where_platform_rights_count_are_read_from_each_table(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    cfg = parse(
        {
            "discord": {"admin_guilds": [81384788765712384, "81384788765712385"]},
            "slack": {"admin_workspaces": ["T024BE7LD"], "workspace_admins": False},
        },
        path,
    )
    discord: DiscordSettings = cfg.settings("discord")
    slack: SlackSettings = cfg.settings("slack")
    assert discord.admin_guilds == {"81384788765712384", "81384788765712385"}
    assert (slack.admin_workspaces, slack.workspace_admins) == ({"T024BE7LD"}, False)
    empty = parse({"discord": {}, "slack": {}}, path)
    assert empty.settings("discord").admin_guilds == frozenset()
    assert empty.settings("slack").admin_workspaces == frozenset()
    assert empty.settings("slack").workspace_admins
    with pytest.raises(ConfigError, match=r"discord.admin_guilds: 'Bessemer' is not a Discord"):
        parse({"discord": {"admin_guilds": ["Bessemer"]}}, path)
