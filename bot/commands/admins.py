"""Who is an admin, and where: the rule every platform's commands are checked against.

Counts have no owners yet, so an admin command changes what every subscribed channel sees, in
every server and workspace. Authority therefore stops at the edge of the places the operator
names (``[admins]`` in the configuration): configured user ids are admins everywhere; a
platform's own rights (Discord: Manage Server or Administrator, and the configured role names;
Slack: workspace admins and owners, as the adapter found them) only inside the listed servers
(``discord_guilds``) and workspaces (``slack_workspaces``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.config import Admins
from bot.subscription import Platform

if TYPE_CHECKING:
    from bot.commands.request import Request


def is_admin(admins: Admins, request: Request) -> bool:
    """Whether ``request`` comes from an admin: a configured user id anywhere; a platform right
    (or, on Discord, an admin role) only inside the servers and workspaces the operator lists."""
    platform = request.channel.platform
    here = request.channel.workspace
    if platform is Platform.DISCORD:
        return request.user_id in admins.discord_users or (
            here in admins.discord_guilds
            and (request.platform_admin or bool(request.roles & admins.discord_roles))
        )
    if platform is Platform.SLACK:
        return request.user_id in admins.slack_users or (
            admins.slack_workspace_admins
            and here in admins.slack_workspaces
            and request.platform_admin
        )
    return admins.console


def refusal_detail(admins: Admins, request: Request) -> str:
    """Why ``request`` was refused, for the audit log."""
    where = request.channel.workspace
    if request.channel.platform is Platform.DISCORD:
        rights = request.platform_admin or bool(request.roles & admins.discord_roles)
        if rights and where not in admins.discord_guilds:
            return (
                f"refused: Manage Server and admin roles count only in the servers listed in "
                f"[admins] discord_guilds, and {where} is not one"
            )
    slack = request.channel.platform is Platform.SLACK
    if slack and request.platform_admin and where not in admins.slack_workspaces:
        return (
            f"refused: workspace admins count only in the workspaces listed in [admins] "
            f"slack_workspaces, and {where} is not one"
        )
    return "refused: not an admin"
