"""The OAuth v2 install flow, and workspaces that each installed the app with their own token.

``GET /oauth/v2/authorize`` is Slack's authorize page, with the installer's approval taken as
given: it redirects to the app's redirect URL with a single-use ``code`` (valid 10 minutes) and
the ``state`` it was given, for the workspace ``team`` names (default: the first one).
``oauth.v2.access`` exchanges the code for that workspace's bot token, checking what Slack
documents: the client id (``invalid_client_id``), the client secret (``bad_client_secret``),
the code (``invalid_code``: unknown, used or expired) and the ``redirect_uri``, which must be
the one the authorize request named, if it named one (``bad_redirect_uri``). Client
credentials come in HTTP Basic auth (slack_sdk's way) or as parameters.

A workspace's bot token acts in its own workspace only: naming a channel of another one answers
``channel_not_found``, a user of another one ``user_not_found``, as Slack does. After
:meth:`Installs.uninstall` its token answers ``token_revoked``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode

from aiohttp import web

from .limits import SlackError
from .records import SocketDelivery
from .workspace import Workspace

JsonDict = dict[str, Any]
CODE_SECONDS = 600.0


@dataclass
class OAuthApp:
    """The app as registered with Slack: its credentials and Redirect URLs."""

    client_id: str = "1111111111.2222222222"
    client_secret: str = "fake-client-secret-0123456789"
    redirect_urls: list[str] = field(default_factory=list)


@dataclass
class _Code:
    team: str
    redirect_uri: str | None
    scopes: str
    expires: float
    used: bool = False


class FakeOAuth:
    def __init__(
        self, *, workspace: Workspace, clock: Callable[[], float], on_change: Callable[[], None]
    ) -> None:
        self.ws = workspace
        self.clock = clock
        self.on_change = on_change
        self.app = OAuthApp()
        self.tokens: dict[str, str] = {}
        """Bot token -> the workspace it was issued for (by oauth.v2.access)."""
        self.revoked: set[str] = set()
        self._codes: dict[str, _Code] = {}

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/oauth/v2/authorize", self.authorize)

    # ------------------------------------------------------------ authorize

    async def authorize(self, request: web.Request) -> web.StreamResponse:
        query = request.query
        if query.get("client_id") != self.app.client_id:
            return web.Response(status=400, text="invalid_client_id")
        asked = query.get("redirect_uri")
        if asked is not None and asked not in self.app.redirect_urls:
            return web.Response(status=400, text="bad_redirect_uri")
        target = asked or (self.app.redirect_urls[0] if self.app.redirect_urls else None)
        if target is None:
            return web.Response(status=400, text="the app has no Redirect URL")
        team = query.get("team") or self.ws.team_id
        if team not in self.ws.teams:
            return web.Response(status=400, text="unknown workspace")
        code = f"{team}.{secrets.token_hex(12)}"
        scopes = query.get("scope", "")
        self._codes[code] = _Code(team, asked, scopes, self.clock() + CODE_SECONDS)
        params = {"code": code, **({"state": query["state"]} if "state" in query else {})}
        raise web.HTTPFound(f"{target}?{urlencode(params)}")

    # --------------------------------------------------------- Web API side

    def access(self, args: JsonDict) -> JsonDict:
        """oauth.v2.access: a code for the bot token of the workspace that approved it."""
        if args.get("client_id") != self.app.client_id:
            raise SlackError("invalid_client_id")
        if args.get("client_secret") != self.app.client_secret:
            raise SlackError("bad_client_secret")
        code = self._codes.get(str(args.get("code") or ""))
        if code is None or code.used or code.expires <= self.clock():
            raise SlackError("invalid_code")
        if args.get("redirect_uri") != code.redirect_uri:
            raise SlackError("bad_redirect_uri")
        code.used = True
        token = next((t for t, team in self.tokens.items() if team == code.team), None)
        if token is None or token in self.revoked:
            token = f"xoxb-{code.team}-{secrets.token_hex(16)}"
            self.tokens[token] = code.team
        self.on_change()
        return {
            "access_token": token,
            "token_type": "bot",
            "scope": code.scopes,
            "bot_user_id": self.ws.bot_user_id,
            "app_id": self.ws.app_id,
            "team": {"id": code.team, "name": self.ws.teams[code.team][1]},
            "enterprise": None,
            "is_enterprise_install": False,
            "authed_user": {"id": "U0INSTALL1"},
        }

    def team_of(self, token: str) -> str | None:
        """The workspace of a token issued here (raises ``token_revoked`` once revoked)."""
        if token in self.revoked:
            raise SlackError("token_revoked")
        return self.tokens.get(token)

    def scoped(self, team: str, method: str, args: JsonDict) -> JsonDict | None:
        """What a workspace's own token may not do elsewhere; auth.test answered for it."""
        if method == "auth.test":
            domain, name = self.ws.teams[team]
            return {
                "url": f"https://{domain}.slack.com/",
                "team": name,
                "user": self.ws.bot_name,
                "team_id": team,
                "user_id": self.ws.bot_user_id,
                "bot_id": self.ws.bot_id,
                "is_enterprise_install": False,
            }
        for key in ("channel", "channel_id"):
            ref = args.get(key)
            channel = self.ws.channels.get(str(ref)) if ref else None
            if channel is not None and channel.team_id != team:
                raise SlackError("channel_not_found")
        user = self.ws.users.get(str(args.get("user"))) if method == "users.info" else None
        if user is not None and user.team_id != team:
            raise SlackError("user_not_found")
        return None


class _Web(Protocol):
    @property
    def oauth(self) -> FakeOAuth: ...


class _HasWeb(Protocol):
    @property
    def _web(self) -> _Web: ...


class Fake(_HasWeb, Protocol):
    """What :class:`Installs` reads of ``fake.FakeSlack``."""

    async def send_event(
        self, event: dict[str, Any], *, team_id: str | None = None
    ) -> SocketDelivery: ...


class Installs:
    """Where the app is installed, and how: the workspaces of ``fake.FakeSlack`` (a mixin)."""

    def add_workspace(self: _HasWeb, domain: str, name: str | None = None) -> str:
        """Install the app in another workspace of the organisation (an Enterprise Grid
        org-wide install: one bot token for all); returns its team id. Commands run in its
        channels carry its team_id and the enterprise_id."""
        return self._web.oauth.ws.add_team(domain, name or domain)

    def add_team(self: _HasWeb, domain: str, name: str | None = None) -> str:
        """Another workspace, on its own (not in an organisation with the first one): the app
        is not installed there until it goes through the OAuth flow. Returns its team id."""
        return self._web.oauth.ws.add_team(domain, name or domain, standalone=True)

    @property
    def oauth_app(self: _HasWeb) -> OAuthApp:
        """The app's client id, secret and Redirect URLs (add the app's before installing)."""
        return self._web.oauth.app

    @property
    def installed_tokens(self: _HasWeb) -> dict[str, str]:
        """Bot token -> workspace, for every workspace that installed the app through OAuth."""
        return dict(self._web.oauth.tokens)

    async def uninstall(self: Fake, team_id: str) -> SocketDelivery:
        """The workspace removes the app: its token is revoked and ``app_uninstalled`` sent
        (over Socket Mode)."""
        oauth = self._web.oauth
        oauth.revoked.update(t for t, team in oauth.tokens.items() if team == team_id)
        oauth.on_change()
        return await self.send_event({"type": "app_uninstalled"}, team_id=team_id)

    async def revoke_bot_token(self: Fake, team_id: str) -> SocketDelivery:
        """The workspace revokes the bot's token: ``tokens_revoked`` is sent (Socket Mode)."""
        oauth = self._web.oauth
        oauth.revoked.update(t for t, team in oauth.tokens.items() if team == team_id)
        oauth.on_change()
        event = {"type": "tokens_revoked", "tokens": {"oauth": [], "bot": [oauth.ws.bot_user_id]}}
        return await self.send_event(event, team_id=team_id)
