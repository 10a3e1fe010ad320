"""Slack's OAuth v2 install flow: one tallybot, any number of workspaces, one bot token each.

With ``[slack] client_id`` set (and ``SLACK_CLIENT_SECRET``), bolt's ``AsyncOAuthFlow`` serves
``install_path`` (a redirect to Slack's authorize page, with a fresh ``state`` that is also set
as a cookie in the installer's browser) and ``redirect_path`` (checks the state, once, then
exchanges the code with oauth.v2.access and keeps the installation in the store). Both are
mounted on the ops server (or on the adapter's own HTTP port without one), whatever the mode
of events (Socket Mode or HTTP).

Incoming events and commands are authorized from the store (:class:`StoreAuthorize`): the
workspace's own bot token, else the single ``SLACK_BOT_TOKEN`` when one is configured. (With
the single token alone, the same authorize answers from the adapter's own auth.test, made once
at start: bolt's default would call auth.test again for every request that comes before its
first answer, a burst of them at start, and show its generic apology on a 429.) An
``app_uninstalled`` or ``tokens_revoked`` event deletes the workspace's installation (bolt's
listeners on our store), and its deliveries then fail permanently, saying why.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_flow import AsyncOAuthFlow
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.installations import StoreInstallations, StoreStates
from adapters.slack.settings import SlackSettings
from adapters.slack.workspaces import Speaker
from bot.platform import Clock, Database, Secret, StoreError

log = logging.getLogger(__name__)

quiet = logging.getLogger("tallybot.slack.oauth.http")
"""The logger of the client that exchanges codes: its DEBUG lines would show the new bot
token (slack_sdk logs every answer's body at DEBUG), so it says nothing below INFO."""
quiet.setLevel(logging.INFO)


class ExchangeClient(AsyncWebClient):
    """The client that exchanges codes. It sends the client credentials as form fields, which
    Slack takes as well as HTTP Basic auth: slack_sdk builds the latter with aiohttp's
    ``BasicAuth``, deprecated (a DeprecationWarning on every install)."""

    async def oauth_v2_access(
        self,
        *,
        client_id: str,
        client_secret: str,
        code: str | None = None,
        redirect_uri: str | None = None,
        grant_type: str | None = None,
        refresh_token: str | None = None,
        **kwargs: object,
    ) -> AsyncSlackResponse:
        fields = {
            "client_id": client_id,
            "client_secret": client_secret,
            "code": code,
            "redirect_uri": redirect_uri,
            "grant_type": grant_type,
            "refresh_token": refresh_token,
        }
        data = {k: v for k, v in fields.items() if v is not None}
        return await self.api_call("oauth.v2.access", data=data)


class StoreAuthorize(AsyncAuthorize):
    """bolt's ``authorize`` for incoming requests, from ``find``: ``Workspaces.find`` (the
    store, then the single token), or the single token's own bot."""

    def __init__(self, find: Callable[[str | None], Awaitable[Speaker | None]]) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.find = find

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        try:
            found = await self.find(team_id)
        except StoreError as exc:
            log.warning("slack: cannot authorize a request from %s: %s", team_id, exc)
            return None
        if found is None or found.client.token is None:
            return None
        return AuthorizeResult(
            enterprise_id=enterprise_id,
            team_id=team_id,
            bot_token=found.client.token,
            bot_id=found.bot_id,
            bot_user_id=found.bot_user_id,
            user_id=user_id,
        )


def oauth_flow(
    settings: SlackSettings,
    client_secret: Secret,
    installations: StoreInstallations,
    db: Database,
    clock: Clock,
    timeout: int,
) -> AsyncOAuthFlow:
    """bolt's flow on our stores, exchanging codes at ``settings.api_base``."""
    assert settings.client_id is not None
    client = ExchangeClient(
        base_url=settings.api_base, timeout=timeout, retry_handlers=[], logger=quiet
    )
    return AsyncOAuthFlow(
        client=client,
        logger=log,
        settings=AsyncOAuthSettings(
            client_id=settings.client_id,
            client_secret=client_secret.reveal(),
            scopes=list(settings.scopes),
            user_scopes=[],
            redirect_uri=settings.redirect_uri,
            install_path=settings.install_path,
            install_page_rendering_enabled=False,
            redirect_uri_path=settings.redirect_path,
            authorization_url=settings.authorize_url,
            installation_store=installations,
            installation_store_bot_only=True,
            state_store=StoreStates(db, clock),
            logger=log,
        ),
    )
