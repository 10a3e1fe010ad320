"""Who is an admin on Slack: authority stops at the edge of each workspace.

Unless turned off (``workspace_admins = false``), admins and owners of a workspace administer
that workspace's own counts (``tenant_admin``; the adapter asks users.info, and a user from
another workspace of a shared channel is no admin here), plus the per-count grants the core
keeps. The operator's counts are administered by the configured user ids (``[slack]
admin_users``) and by the admins and owners of the workspaces listed under ``admin_workspaces``
(the operator's own: ``home``, where its private counts are seen), in their own workspace.
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
        return self.workspace_admins

    def verdict(self, asker: Asker) -> Verdict:
        home = asker.workspace in self.workspaces
        here = self.workspace_admins and asker.platform_admin
        if asker.user_id in self.users:
            return Verdict(True, tenant_admin=here, home=home)
        if not here:
            return Verdict(home=home)
        if home:
            return Verdict(True, tenant_admin=True, home=True)
        return Verdict(
            False,
            "refused: workspace admins count only in the workspaces listed in [slack] "
            f"admin_workspaces, and {asker.workspace} is not one",
            tenant_admin=True,
        )
