"""Who is an admin on a platform: the input of a plug-in's admin policy (who asks, where) and its
verdict. The base policy denies everyone (``bot.platform.Plugin.admins``; re-exported there)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Asker:
    """Who asks, where, and what the platform itself says of them: the input of a policy."""

    user_id: str
    workspace: str
    """The place the command comes from: the Discord server, the Slack workspace, ..."""
    platform_admin: bool = False
    """The platform says this user administers the place (Manage Server, workspace admin)."""
    roles: frozenset[str] = frozenset()
    """The user's roles there (ids and names), where the platform has roles."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether the asker is an admin; if not, why (the audit log's detail of a refusal)."""

    admin: bool = False
    """One of the operator's admins: they administer the operator's counts."""
    refusal: str = "refused: not an admin"
    tenant_admin: bool = False
    """They administer the place they ask from (its own counts), as the platform says."""
    home: bool = False
    """The place is one the operator lists: the operator's private counts are seen there."""


class AdminPolicy:
    """Who is an admin on one platform. This base denies everyone: a platform whose plug-in
    gives no policy has no admins, never everyone."""

    def verdict(self, asker: Asker) -> Verdict:
        return Verdict()


DENY = AdminPolicy()


def deny_all(settings: Any) -> AdminPolicy:
    return DENY
