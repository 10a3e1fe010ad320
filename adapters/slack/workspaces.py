"""Which bot speaks in which Slack workspace: one token for all, or one per installation.

Single-token mode (``SLACK_BOT_TOKEN``, today's): one client for every workspace. With the
OAuth flow on (``[slack] client_id``), each workspace that installed the app has its own bot
token in the store (``adapters.slack.installations``); a workspace without one falls back to
the single token only if that token is the workspace's own (``auth.test`` says which): another
workspace's token would post in the wrong workspace (``channel_not_found``) and answer commands
from a workspace that uninstalled the app. The single token's own workspace uninstalling the
app (or revoking its tokens) ends the fallback there too. Lookups are cached for ``ttl``
seconds (by the injected monotonic clock) in a small bounded cache, a workspace with no
installation only for ``miss_ttl`` (another instance on the same store may install it any
moment); an install or an uninstall through this process forgets its workspace at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from cachetools import TLRUCache
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.web.async_client import AsyncWebClient

from bot.platform import PermanentDeliveryError, StoreError, TransientDeliveryError


@dataclass(frozen=True, slots=True)
class Speaker:
    """The bot in one workspace: its client (with that workspace's token) and its ids there."""

    client: AsyncWebClient
    bot_id: str | None
    bot_user_id: str | None
    team_id: str | None


class Workspaces:
    """The bot of each workspace (see the module docstring)."""

    def __init__(
        self,
        *,
        single: Speaker | None,
        installations: AsyncInstallationStore | None,
        make_client: Callable[[str], AsyncWebClient],
        monotonic: Callable[[], float],
        install_hint: str = "",
        ttl: float = 300.0,
        miss_ttl: float = 10.0,
        size: int = 1024,
    ) -> None:
        self.single = single
        self.installations = installations
        self._make_client = make_client
        self._hint = install_hint
        self._at = install_hint.replace("; install it again", "")  # " at /slack/install"
        self._ttl = ttl
        self._miss_ttl = miss_ttl
        self._cache: TLRUCache[str, Speaker | None, float] = TLRUCache(
            size, self._expires, timer=monotonic
        )
        """Each workspace's bot from the store; None: it has none (a miss, kept less long)."""

    def _expires(self, team_id: str, found: Speaker | None, now: float) -> float:
        return now + (self._miss_ttl if found is None else self._ttl)

    async def find(self, team_id: str | None) -> Speaker | None:
        """The bot of ``team_id``: its installation, else the single token if it is that
        workspace's, else None. Raises :class:`StoreError` when the store cannot be read."""
        if self.installations is None or not team_id:
            return self.single
        if team_id in self._cache:
            return self._cache[team_id] or self._single_of(team_id)
        bot = await self.installations.async_find_bot(enterprise_id=None, team_id=team_id)
        found = None
        if bot is not None and bot.bot_token:
            found = Speaker(self._make_client(bot.bot_token), bot.bot_id, bot.bot_user_id, team_id)
        self._cache[team_id] = found
        return found or self._single_of(team_id)

    def _single_of(self, team_id: str) -> Speaker | None:
        """The single token, if it is ``team_id``'s own."""
        single = self.single
        return single if single is not None and single.team_id == team_id else None

    async def speaker(self, team_id: str, where: str) -> Speaker:
        """The bot of ``team_id``, for a delivery: a workspace with none (never installed, or
        uninstalled since) fails it permanently, saying so."""
        try:
            found = await self.find(team_id)
        except StoreError as exc:
            raise TransientDeliveryError(f"{where}: the Slack installations: {exc}") from exc
        if found is None:
            raise PermanentDeliveryError(
                f"{where}: tallybot is not installed in the Slack workspace {team_id} (the app "
                f"was uninstalled there or its token revoked){self._hint}",
                cause="tallybot is not installed in the workspace (the app was uninstalled "
                "there or its token revoked)",
                fix=f"Install the app in the workspace again{self._at}, then subscribe the "
                "channels again.",
            )
        return found

    def forget(self, team_id: str | None) -> None:
        """Drop what is cached of ``team_id`` (an install, an uninstall, revoked tokens)."""
        if team_id:
            self._cache.pop(team_id, None)

    def removed(self, team_id: str | None) -> None:
        """The app was uninstalled from ``team_id`` or its tokens revoked there: forget it, and
        if the single token is that workspace's, it serves nobody any more."""
        self.forget(team_id)
        if self.single is not None and team_id and self.single.team_id == team_id:
            self.single = None
