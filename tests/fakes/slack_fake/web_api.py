"""The Web API: `/api/<method>`, strict the way Slack is (uploads in uploads.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aiohttp import web

from tests.fakes.loopback.hangs import Hangs
from tests.fakes.loopback.limits import SlidingWindow, TokenBucket

from .args import JsonDict, read_args, truthy
from .history import conversations_history
from .limits import (
    RateLimitedError,
    SlackError,
    parse_json_arg,
    retry_after_header,
    take,
    validate_blocks,
    validate_metadata,
    validate_text,
)
from .manifest import Manifest
from .oauth import FakeOAuth
from .records import (
    MessageRevision,
    RecordedCall,
    RecordedEphemeral,
    RecordedSlackMessage,
)
from .threads import check_parent, conversations_replies, pins_add, pins_remove
from .uploads import Uploads
from .views import Views
from .workspace import Workspace

Handler = Callable[[JsonDict], JsonDict]

DEFAULT_WINDOW_LIMITS: Mapping[str, int] = {
    # Slack's tiers, per method per workspace per minute.
    "chat.delete": 50,
    "chat.postEphemeral": 100,
    "conversations.history": 50,
    "conversations.replies": 50,
    "pins.add": 20,
    "pins.remove": 20,
    "conversations.info": 50,
    "conversations.open": 50,
    "users.info": 100,
    "files.getUploadURLExternal": 100,
    "files.completeUploadExternal": 100,
}
DEFAULT_ERRORS = {429: "ratelimited", 503: "service_unavailable"}


@dataclass
class FailRule:
    status: int
    error: str
    times: int
    commit: bool
    drop: bool
    channel: str | None = None
    """Only calls about this channel (None: any)."""
    retry_after: float = 1.0
    """The Retry-After of a 429."""


class DroppedConnection(Exception):
    """Raised by a fail rule with drop=True: the fake closes the socket unanswered."""


class WebApi:
    def __init__(
        self,
        *,
        workspace: Workspace,
        manifest: Manifest,
        bot_token: str,
        app_token: str,
        clock: Callable[[], float],
        post_per_channel_per_s: float,
        post_burst: int,
        update_per_min: int,
        method_limits_per_min: Mapping[str, int] | None,
        method_windows: Mapping[str, tuple[int, float]] | None,
        retry_after: int | None,
        open_socket_url: Callable[[], str],
        base_url: Callable[[], str],
        on_change: Callable[[], None],
    ) -> None:
        self.ws = workspace
        self.manifest = manifest
        self.oauth = FakeOAuth(workspace=workspace, clock=clock, on_change=on_change)
        self.bot_token = bot_token
        self.app_token = app_token
        self.clock = clock
        self.retry_after = retry_after
        self.hangs = Hangs()
        self._open_socket_url = open_socket_url
        self._base_url = base_url
        self._on_change = on_change
        self._post_rate = post_per_channel_per_s
        self._post_burst = post_burst
        self._post_buckets: dict[str, TokenBucket] = {}
        limits = {**DEFAULT_WINDOW_LIMITS, "chat.update": update_per_min}
        limits.update(method_limits_per_min or {})
        self._windows = {m: SlidingWindow(n, 60.0, clock) for m, n in limits.items()}
        for m, (n, seconds) in (method_windows or {}).items():
            self._windows[m] = SlidingWindow(n, seconds, clock)
        self._fail_rules: dict[str, list[FailRule]] = {}
        self.calls: list[RecordedCall] = []
        self.transports: dict[int, object] = {}
        """Every TCP connection a Web API call came on, by id (held, so no id is reused)."""
        self.ephemerals: list[RecordedEphemeral] = []
        self.files = Uploads(
            workspace=workspace, clock=clock, base_url=base_url, on_change=on_change
        )
        self.uploads = self.files.recorded
        self.count_429 = 0
        self.views = Views(workspace, clock)
        self._handlers: dict[str, tuple[str, Handler]] = {
            "auth.test": ("bot", self._auth_test),
            "oauth.v2.access": ("client", self.oauth.access),
            "apps.connections.open": ("app", self._apps_connections_open),
            "chat.postMessage": ("bot", self._chat_post_message),
            "chat.update": ("bot", self._chat_update),
            "chat.delete": ("bot", self._chat_delete),
            "chat.postEphemeral": ("bot", self._chat_post_ephemeral),
            "conversations.info": ("bot", self._conversations_info),
            "conversations.history": ("bot", self._conversations_history),
            "conversations.open": ("bot", self._conversations_open),
            "conversations.replies": ("bot", lambda a: conversations_replies(self.ws, a)),
            "pins.add": ("bot", lambda a: pins_add(self.ws, a)),
            "pins.remove": ("bot", lambda a: pins_remove(self.ws, a)),
            "users.info": ("bot", self._users_info),
            "files.getUploadURLExternal": ("bot", self.files.get_upload_url),
            "files.completeUploadExternal": ("bot", self.files.complete_upload),
            "views.open": ("bot", self.views.open),
        }

    # ------------------------------------------------------------------ HTTP

    async def handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        if request.transport is not None:
            self.transports[id(request.transport)] = request.transport
        try:
            args, token = await read_args(request)
        except SlackError as exc:
            args, token = {}, None
            status, body = exc.status, {"ok": False, "error": exc.error}
            headers: dict[str, str] = {}
        else:
            channel = args.get("channel", args.get("channel_id"))
            await self.hangs.wait(channel if isinstance(channel, str) else None)
            try:
                status, body, headers = self.dispatch(method, args, token)
            except DroppedConnection:
                self._record(method, args, token, request.method, 0, {"dropped": True}, {})
                if request.transport is not None:
                    request.transport.close()
                raise web.HTTPInternalServerError() from None
        self._record(method, args, token, request.method, status, body, headers)
        return web.json_response(body, status=status, headers=headers)

    def _record(
        self,
        method: str,
        args: JsonDict,
        token: str | None,
        verb: str,
        status: int,
        body: JsonDict,
        headers: dict[str, str],
    ) -> None:
        call = RecordedCall(method, args, token, verb, self.clock(), status, body, headers)
        self.calls.append(call)
        self._on_change()

    # -------------------------------------------------------------- dispatch

    def fail_next(
        self,
        method: str,
        *,
        status: int,
        error: str | None,
        times: int,
        commit: bool,
        drop: bool,
        channel: str | None = None,
        retry_after: float = 1.0,
    ) -> None:
        if method not in self._handlers:
            raise ValueError(f"the fake does not implement {method!r}")
        if error is None:
            if status == 200:
                raise ValueError("fail_next with status 200 needs an error code")
            error = DEFAULT_ERRORS.get(status, "internal_error")
        rule = FailRule(status, error, times, commit, drop, channel, retry_after)
        self._fail_rules.setdefault(method, []).append(rule)

    def dispatch(
        self, method: str, args: JsonDict, token: str | None
    ) -> tuple[int, JsonDict, dict[str, str]]:
        entry = self._handlers.get(method)
        if entry is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        kind, handler = entry
        rule = self._take_fail_rule(method, args.get("channel"))
        if rule is not None and not rule.commit:
            return self._failure(rule)
        try:
            team = self._check_token(token, kind, args)
            im = self._is_im(args.get("channel"))
            needed = self.manifest.missing_scope(method, im=im) if kind == "bot" else None
            if needed is not None:  # the app was not granted the scope: Slack says which
                provided = ",".join(sorted(self.manifest.scopes))
                return (
                    200,
                    {"ok": False, "error": "missing_scope", "needed": needed, "provided": provided},
                    {},
                )
            self._check_rate(method, args)
            scoped = self.oauth.scoped(team, method, args) if team else None
            result = handler(args) if scoped is None else scoped
        except RateLimitedError as exc:
            self.count_429 += 1
            headers = {"Retry-After": retry_after_header(exc.retry_after, self.retry_after)}
            return 429, {"ok": False, "error": "ratelimited"}, headers
        except SlackError as exc:
            return exc.status, {"ok": False, "error": exc.error}, {}
        if rule is not None:
            return self._failure(rule)
        granted = (
            {"x-oauth-scopes": ",".join(sorted(self.manifest.scopes))} if kind == "bot" else {}
        )
        return 200, {"ok": True, **result}, granted  # Slack says a bot token's scopes on each

    def _is_im(self, ref: object) -> bool:
        found = self.ws.channels.get(ref) if isinstance(ref, str) else None
        return found is not None and found.im_user is not None

    def _conversations_open(self, args: JsonDict) -> JsonDict:
        users = args.get("users")
        if not isinstance(users, str) or not users:
            raise SlackError("users_list_not_supplied")
        if "," in users:
            raise SlackError("method_not_supported_for_channel_type")  # the fake has no mpims
        return {"channel": {"id": self.ws.open_im(users.strip()).id}}

    def _take_fail_rule(self, method: str, channel: object) -> FailRule | None:
        rules = self._fail_rules.get(method, [])
        rule = next((r for r in rules if r.channel is None or r.channel == channel), None)
        if rule is None:
            return None
        rule.times -= 1
        if rule.times <= 0:
            rules.remove(rule)
        return rule

    def _failure(self, rule: FailRule) -> tuple[int, JsonDict, dict[str, str]]:
        if rule.drop:
            raise DroppedConnection()
        headers: dict[str, str] = {}
        if rule.status == 429:
            self.count_429 += 1
            headers["Retry-After"] = retry_after_header(rule.retry_after, self.retry_after)
        return rule.status, {"ok": False, "error": rule.error}, headers

    def _check_token(self, token: str | None, kind: str, args: JsonDict) -> str | None:
        """The token's type checked; the workspace of a token issued through OAuth, if it is one."""
        if kind == "client":  # client credentials (oauth.v2.access checks them)
            return None
        if not token:
            raise SlackError("not_authed")
        team = self.oauth.team_of(token)
        if team is not None or token == self.bot_token:
            actual = "bot"
        elif token == self.app_token:
            actual = "app"
        else:
            raise SlackError("invalid_auth")
        if actual != kind:
            raise SlackError("not_allowed_token_type")
        return team

    def _check_rate(self, method: str, args: JsonDict) -> None:
        if method == "chat.postMessage":
            ref = args.get("channel")
            key = str(ref)
            if isinstance(ref, str):
                found = self.ws.channels.get(ref) or next(
                    (c for c in self.ws.channels.values() if c.name == ref.lstrip("#")), None
                )
                key = found.id if found is not None else ref
            if method in self._windows:  # a workspace-wide limit, when the test sets one
                take(self._windows[method])
            bucket = self._post_buckets.get(key)
            if bucket is None:
                bucket = TokenBucket(
                    rate=self._post_rate, capacity=self._post_burst, clock=self.clock
                )
                self._post_buckets[key] = bucket
            take(bucket)
        elif method in self._windows:
            take(self._windows[method])

    # -------------------------------------------------------------- methods

    def _auth_test(self, args: JsonDict) -> JsonDict:
        return {
            "url": f"https://{self.ws.team_domain}.slack.com/",
            "team": self.ws.team_name,
            "user": self.ws.bot_name,
            "team_id": self.ws.team_id,
            "user_id": self.ws.bot_user_id,
            "bot_id": self.ws.bot_id,
            "is_enterprise_install": False,
        }

    def _apps_connections_open(self, args: JsonDict) -> JsonDict:
        return {"url": self._open_socket_url()}

    def _message_content(
        self, args: JsonDict, *, require: bool
    ) -> tuple[str | None, list[JsonDict] | None]:
        text = args.get("text")
        markdown = args.get("markdown_text")
        if text and markdown:
            raise SlackError("markdown_text_conflict")
        checked = validate_text(text if text is not None else markdown)
        blocks = validate_blocks(args.get("blocks"))
        attachments = parse_json_arg(args.get("attachments"), error="invalid_attachments")
        if require and not checked and not blocks and not attachments:
            raise SlackError("no_text")
        return (checked if (text is not None or markdown is not None) else None), blocks

    def _message_out(self, message: RecordedSlackMessage) -> JsonDict:
        return message.to_api(team_id=self.ws.team_id, app_id=self.ws.app_id, with_metadata=True)

    def _chat_post_message(self, args: JsonDict) -> JsonDict:
        channel = self.ws.writable_channel(args.get("channel"))
        text, blocks = self._message_content(args, require=True)
        metadata = validate_metadata(args.get("metadata"))
        thread_ts = args.get("thread_ts") or None
        if thread_ts is not None:
            check_parent(channel, thread_ts)
        message = self.ws.add_message(
            channel,
            text=text or "",
            blocks=blocks,
            metadata=metadata,
            user=self.ws.bot_user_id,
            from_bot=True,
            thread_ts=str(thread_ts) if thread_ts is not None else None,
            source="chat.postMessage",
            now=self.clock(),
        )
        message.broadcast = thread_ts is not None and truthy(args.get("reply_broadcast"))
        return {"channel": channel.id, "ts": message.ts, "message": self._message_out(message)}

    def _chat_update(self, args: JsonDict) -> JsonDict:
        channel = self.ws.writable_channel(args.get("channel"))
        message = self.ws.find_message(channel, args.get("ts"))
        if message.bot_id is None:
            raise SlackError("cant_update_message")
        text, blocks = self._message_content(args, require=True)
        metadata = validate_metadata(args.get("metadata"))
        message.revisions.append(
            MessageRevision(message.text, message.blocks, message.metadata, self.clock())
        )
        if text is not None:
            message.text = text
        if blocks is not None:
            message.blocks = blocks or None
        if metadata is not None:
            message.metadata = metadata
        message.edited = True
        return {
            "channel": channel.id,
            "ts": message.ts,
            "text": message.text,
            "message": self._message_out(message),
        }

    def _chat_delete(self, args: JsonDict) -> JsonDict:
        channel = self.ws.writable_channel(args.get("channel"))
        message = self.ws.find_message(channel, args.get("ts"))
        if message.bot_id is None:
            raise SlackError("cant_delete_message")
        message.deleted = True
        return {"channel": channel.id, "ts": message.ts}

    def _chat_post_ephemeral(self, args: JsonDict) -> JsonDict:
        channel = self.ws.writable_channel(args.get("channel"))
        user = args.get("user")
        if not isinstance(user, str) or user not in self.ws.users:
            raise SlackError("user_not_found")
        text, blocks = self._message_content(args, require=True)
        ts = self.ws.next_ts()
        self.ephemerals.append(RecordedEphemeral(channel.id, user, text or "", blocks, ts))
        return {"message_ts": ts}

    def _conversations_info(self, args: JsonDict) -> JsonDict:
        return {"channel": self.ws.find_channel(args.get("channel")).to_api()}

    def _conversations_history(self, args: JsonDict) -> JsonDict:
        return conversations_history(self.ws, args)

    def _users_info(self, args: JsonDict) -> JsonDict:
        user = self.ws.users.get(str(args.get("user")))
        if user is None:
            raise SlackError("user_not_found")
        return {"user": user.to_api()}
