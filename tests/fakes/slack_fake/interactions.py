"""Payloads Slack sends to an app (slash commands, events), response_url and request signing."""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.loopback.notify import ChangeNotifier

from .limits import SlackError, validate_blocks, validate_text
from .manifest import Manifest
from .records import ResponseUrlPost
from .views import Views
from .workspace import Workspace

RESPONSE_URL_MAX_USES = 5
RESPONSE_URL_TTL_S = 30 * 60


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """X-Slack-Signature: v0= + hex HMAC-SHA256 of "v0:<timestamp>:<body>"."""
    base = b"v0:" + str(timestamp).encode() + b":" + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, timestamp: int | None) -> dict[str, str]:
    ts = int(time.time()) if timestamp is None else timestamp
    return {"X-Slack-Request-Timestamp": str(ts), "X-Slack-Signature": sign(secret, body, ts)}


@dataclass
class _ResponseUrl:
    url: str
    channel_id: str
    created_at: float
    uses: int = 0


class Interactions:
    def __init__(
        self,
        *,
        workspace: Workspace,
        verification_token: str,
        base_url: Callable[[], str],
        clock: Callable[[], float],
        notifier: ChangeNotifier,
        views: Views,
        manifest: Manifest,
    ) -> None:
        self._ws = workspace
        self._manifest = manifest
        self._views = views
        self._verification_token = verification_token
        self._base_url = base_url
        self._clock = clock
        self._notifier = notifier
        self._urls: dict[str, _ResponseUrl] = {}
        self.response_url_posts: list[ResponseUrlPost] = []
        self.limited_responses = 0
        """The next this many posts to a response_url are answered 429 (nothing shown)."""

    # -------------------------------------------------------------- payloads

    def slash_command(
        self, *, command: str, text: str, user_id: str, channel_id: str
    ) -> dict[str, str]:
        """The slash-command fields, as form values (strings), like Slack sends them."""
        if not command.startswith("/"):
            raise ValueError("a slash command starts with '/'")
        declared = self._manifest.commands.get(command)
        if declared is None:
            raise ValueError(f"the manifest declares no {command}: Slack would not send it")
        channel = self._ws.known_channel(channel_id)
        user = self._ws.known_user(user_id)
        text = self._as_sent(text, channel.team_id, escape=declared.should_escape)
        hook_id = self._ws.next_id("H")
        secret = hashlib.sha256(f"{hook_id}{self._clock()}".encode()).hexdigest()[:24]
        # The workspace the command was run in: the channel's. With an org-wide install, Slack
        # adds the organisation (enterprise_id) and says so (is_enterprise_install).
        team = channel.team_id
        org = self._ws.org_install and team not in self._ws.standalone
        url = f"{self._base_url()}commands/{team}/{hook_id}/{secret}"
        self._urls[url] = _ResponseUrl(url, channel.id, self._clock())
        trigger_id = f"{hook_id[1:]}.{team}.{secret[:16]}"
        self._views.issue(trigger_id, user.id, team)
        return {
            "token": self._verification_token,
            "team_id": team,
            "team_domain": self._ws.teams[team][0],
            **({"enterprise_id": self._ws.enterprise_id} if org else {}),
            "channel_id": channel.id,
            "channel_name": channel.name,
            "user_id": user.id,
            "user_name": user.name,
            "command": command,
            "text": text,
            "api_app_id": self._ws.app_id,
            "is_enterprise_install": "true" if org else "false",
            "response_url": url,
            "trigger_id": trigger_id,
        }

    def _as_sent(self, text: str, team: str, *, escape: bool) -> str:
        """The command text as Slack sends it: with should_escape, a typed ``@name`` of a member
        becomes ``<@U…|name>``, ``#name`` of a channel ``<#C…|name>`` and @here / @channel /
        @everyone ``<!here>`` …; without it, the text as typed (escaped forms never occur)."""
        if not escape:
            if re.search(r"<[@#!]", text):
                raise ValueError(
                    "should_escape is false in the manifest: Slack sends mentions as typed "
                    f"(@name), never escaped: {text!r}"
                )
            return text
        users = {u.name: u.id for u in self._ws.users.values() if u.team_id == team}
        channels = {c.name: c.id for c in self._ws.channels.values() if c.team_id == team}

        def one(match: re.Match[str]) -> str:
            sigil, name = match[1], match[2]
            if sigil == "@" and name in ("here", "channel", "everyone"):
                return f"<!{name}>"
            if sigil == "@" and name in users:
                return f"<@{users[name]}|{name}>"
            if sigil == "#" and name in channels:
                return f"<#{channels[name]}|{name}>"
            return match[0]

        return re.sub(r"(?<![<\w|^])([@#])([\w.-]+)", one, text)

    def event_callback(
        self, event: dict[str, Any], *, event_id: str | None, team_id: str | None = None
    ) -> dict[str, Any]:
        """An Events API `event_callback` body around `event` (ts / event_ts filled in), from
        the first workspace or ``team_id``."""
        team = self._ws.known_team(team_id)
        event = dict(event)
        if "type" not in event:
            raise ValueError("an event needs a type")
        if event["type"] not in self._manifest.bot_events:
            raise ValueError(
                f"the manifest subscribes to no {event['type']!r} event: Slack would not send it"
            )
        event.setdefault("ts", self._ws.next_ts())
        event.setdefault("event_ts", event["ts"])
        if event["type"] in ("app_mention", "message"):
            event.setdefault("team", team)
        return {
            "token": self._verification_token,
            "team_id": team,
            "context_team_id": team,
            "context_enterprise_id": None,
            "api_app_id": self._ws.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": event_id or self._ws.next_id("Ev"),
            "event_time": int(float(event["event_ts"])),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": team,
                    "user_id": self._ws.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": f"4-{self._ws.app_id}-{team}",
        }

    # ---------------------------------------------------------- response_url

    async def handle_response_url(self, request: web.Request) -> web.StreamResponse:
        url = f"{self._base_url()}{request.path.lstrip('/')}"
        entry = self._urls.get(url)
        body: Any = None
        if request.content_type == "application/json":
            try:
                body = await request.json()
            except ValueError:
                body = None
        else:
            await request.read()
        status, error = 200, None
        headers: dict[str, str] = {}
        try:
            if self.limited_responses > 0:
                self.limited_responses -= 1
                headers["Retry-After"] = "1"
                raise SlackError("ratelimited", status=429)
            if entry is None:
                raise SlackError("invalid_url", status=404)
            if self._clock() - entry.created_at > RESPONSE_URL_TTL_S:
                raise SlackError("expired_url", status=404)
            if entry.uses >= RESPONSE_URL_MAX_USES:
                raise SlackError("used_url", status=404)
            if not isinstance(body, dict):
                raise SlackError("invalid_payload", status=400)
            self._apply_response(entry, body)
        except SlackError as exc:
            status, error = exc.status, exc.error
        post = ResponseUrlPost(
            url=url,
            body=body if isinstance(body, dict) else {},
            response_type=_response_type(body),
            replace_original=_flag(body, "replace_original"),
            delete_original=_flag(body, "delete_original"),
            status=status,
            error=error,
            time=self._clock(),
        )
        self.response_url_posts.append(post)
        self._notifier.notify()
        answer: dict[str, Any] = {"ok": error is None}
        if error is not None:
            answer["error"] = error
        return web.json_response(answer, status=status, headers=headers)

    def _apply_response(self, entry: _ResponseUrl, body: dict[str, Any]) -> None:
        response_type = body.get("response_type")
        if response_type not in (None, "ephemeral", "in_channel"):
            raise SlackError("invalid_payload", status=400)
        try:
            text = validate_text(body.get("text"))
            blocks = validate_blocks(body.get("blocks"))
        except SlackError as exc:
            raise SlackError(exc.error, status=400) from exc
        if not text and not blocks and not _flag(body, "delete_original"):
            raise SlackError("no_text", status=400)
        entry.uses += 1
        channel = self._ws.channels.get(entry.channel_id)
        if response_type == "in_channel" and channel is not None and not channel.deleted:
            self._ws.add_message(
                channel,
                text=text,
                blocks=blocks,
                metadata=None,
                user=self._ws.bot_user_id,
                from_bot=True,
                thread_ts=None,
                source="response_url",
                now=self._clock(),
            )


def _response_type(body: Any) -> str:
    if isinstance(body, dict) and body.get("response_type") == "in_channel":
        return "in_channel"
    return "ephemeral"


def _flag(body: Any, key: str) -> bool:
    if not isinstance(body, dict):
        return False
    value = body.get(key)
    return value is True or (isinstance(value, str) and value.lower() == "true")
