"""Who is an admin on Slack: authority stops at the edge of the workspaces the operator lists.

Configured user ids (``[slack] admin_users``) are admins everywhere. Unless turned off
(``workspace_admins = false``), admins and owners of a workspace are admins too, but only in
the workspaces listed under ``admin_workspaces``, and only of their own workspace (the adapter
asks users.info, and a user from another workspace of a shared channel is no admin here).
"""

from __future__ import annotations

from adapters.slack.settings import SlackSettings
from bot.platform import AdminPolicy, Asker, Verdict


class SlackAdmins(AdminPolicy):
    def __init__(self, settings: SlackSettings) -> None:
        self.users = settings.admin_users
        self.workspaces = settings.admin_workspaces
        self.workspace_admins = settings.workspace_admins

    def asks_platform(self, user_id: str) -> bool:
        """Whether the verdict on ``user_id`` depends on their rights in the workspace (worth a
        users.info)."""
        return self.workspace_admins and user_id not in self.users

    def verdict(self, asker: Asker) -> Verdict:
        if asker.user_id in self.users:
            return Verdict(True)
        if not (self.workspace_admins and asker.platform_admin):
            return Verdict()
        if asker.workspace in self.workspaces:
            return Verdict(True)
        return Verdict(
            False,
            "refused: workspace admins count only in the workspaces listed in [slack] "
            f"admin_workspaces, and {asker.workspace} is not one",
        )
