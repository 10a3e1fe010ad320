"""The webhook adapter: each delivery one POST to its target, exactly once with the receiver's
help.

**Exactly once.** Every request carries ``Idempotency-Key``: the delivery's key (stable across
its retries, a restart included), or for an edit, the message's id with a digest of the new
content. A retry after a lost answer or a kill -9 sends the same key, and the receiver keeps
the keys it has seen for ``dedupe_hours`` and answers a repeat with a 2xx without showing it
again (``docs/how-to/webhooks.md``); ``dedup_window`` tells the core so, and nothing can be
read back from a webhook (``find_posted`` finds nothing). A message's id is its key.

**Failures.** A 2xx is delivered. A 429 waits its ``Retry-After`` (``RateLimited``, through the
pacer); a 5xx, a timeout or a lost connection is transient, retried by the core with its
backoff; a 3xx (redirects are never followed), a 4xx or an address the egress guard refuses is
permanent: the core disables the subscription and tells the place's admins once. So is a target
that failed ``disable_after`` times in a row: from then on it takes nothing until the bot
restarts. An edit a ``json`` receiver answers 404 or 410 is ``MessageGone`` (the scoreboard is
posted anew); ``slack`` and ``teams`` targets cannot edit, so an edit posts the new content.

**Limits.** Each request is paced (``LIMITS``: one post a second per target, 200 a second in
all; ``[webhook.limits]`` changes them by name). Bodies are capped (``max_body``: a final's chart
is left out past it); at most ``ANSWER_READ`` bytes of an answer are read; the connection goes
through the egress guard (``GuardedSession``), which reaches private addresses only where
``allow_private_addresses`` says so.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

import aiohttp
from sqlalchemy import select
from yarl import URL

from bot.platform import (
    Adapter,
    Attachment,
    Bucket,
    ChannelRef,
    Context,
    Earlier,
    EgressPolicy,
    EgressRefused,
    GuardedSession,
    Limits,
    MessageGone,
    Outgoing,
    Pace,
    PermanentDeliveryError,
    Platform,
    RateLimited,
    Route,
    TransientDeliveryError,
    Window,
    retry_after_header,
    signed_headers,
    unix,
    unpaced,
)

from .formats import json_body, slack_body, teams_body
from .settings import Target, WebhookSettings
from .tables import webhook_targets

log = logging.getLogger(__name__)

IDEMPOTENCY_HEADER = "Idempotency-Key"
POST = "post"
PER_TARGET = Bucket("posts per target", Window(1, 1.0), per_channel=True)
OVERALL = Bucket("posts", Window(200, 1.0))
LIMITS = Limits(routes={POST: (PER_TARGET,)}, every=(OVERALL,))
ANSWER_READ = 4096
"""Bytes of a receiver's answer read at most (shown in errors, cut)."""
OPERATOR = "operator"
"""The workspace of the operator's targets: ``webhook:operator/NAME``."""
USER_AGENT = "tallybot-webhook/1"


@dataclass(frozen=True, slots=True)
class Resolved:
    """A target with its secrets read."""

    name: str
    format: str
    url: str
    secret: str | None
    chat: bool = False
    """Registered in chat (:mod:`.chat`): reached only through the guard for chat URLs."""


class WebhookAdapter(Adapter):
    platform = Platform("webhook")

    def __init__(
        self,
        settings: WebhookSettings,
        context: Context,
        *,
        resolver: aiohttp.abc.AbstractResolver | None = None,
    ) -> None:
        self.settings = settings
        self.context = context
        self.clock = context.clock
        self.limits = LIMITS.with_windows(settings.limits)
        self.dedup_window = settings.dedupe_hours * 3600
        self.targets = {t.name: self._resolve(t) for t in settings.targets}
        self.failures: dict[str, int] = {}
        self.disabled: dict[str, PermanentDeliveryError] = {}
        policy = EgressPolicy(
            allow_private_addresses=settings.allow_private_addresses, max_redirects=0
        )
        timeout = aiohttp.ClientTimeout(total=settings.timeout)
        self.http = GuardedSession(policy, timeout=timeout, resolver=resolver)
        self.chat_http = GuardedSession(
            EgressPolicy(max_redirects=0), timeout=timeout, resolver=resolver
        )
        """For targets registered in chat: never a private address, whatever the operator's
        own targets may reach."""

    def _resolve(self, target: Target) -> Resolved:
        secret = target.secret_env
        return Resolved(
            target.name,
            target.format,
            self.context.secret(target.url_env).reveal(),
            None if secret is None else self.context.secret(secret).reveal(),
        )

    @staticmethod
    def channel(name: str) -> ChannelRef:
        return ChannelRef(Platform("webhook"), OPERATOR, name)

    async def aopen(self) -> None:
        await self.http.aopen()
        await self.chat_http.aopen()
        for target in self.settings.targets:
            for count in target.counts:
                await self._subscribe(target, count)

    async def _subscribe(self, target: Target, count: str) -> None:
        """``/count subscribe COUNT MODE`` for the target, as the operator's config asks."""
        channel = self.channel(target.name)
        user = f"config:{target.name}:{count}"
        asked = f"subscribe {count} {target.mode}"
        request = self.context.request(channel, user, "the [webhook] table", asked)
        reply = await self.context.handle(request)
        log.info("webhook target %s: %s", target.name, reply.text.splitlines()[0][:200])

    async def aclose(self) -> None:
        await self.http.aclose()
        await self.chat_http.aclose()

    async def _target(self, channel: ChannelRef) -> Resolved:
        if channel.workspace == OPERATOR:
            found = self.targets.get(channel.channel)
        else:
            found = await self._chat_target(channel)
        if found is None:
            raise PermanentDeliveryError(
                f"no webhook target named {channel.channel!r} in [webhook] targets",
                fix="Add it to [[webhook.targets]] or unsubscribe it.",
            )
        gone = self.disabled.get(found.name)
        if gone is not None:
            raise gone
        return found

    async def _chat_target(self, channel: ChannelRef) -> Resolved | None:
        """A target a place registered in chat (:mod:`.chat`), if the operator allows them."""
        number = channel.channel.removeprefix("t")
        store = self.context.store
        if not self.settings.allow_chat_targets or store is None or not number.isdigit():
            return None
        async with store.connect() as conn:
            row = (
                await conn.execute(
                    select(webhook_targets).where(
                        webhook_targets.c.id == int(number),
                        webhook_targets.c.place == channel.workspace,
                    )
                )
            ).first()
        if row is None:
            return None
        return Resolved(
            f"{channel.workspace}/{channel.channel}", row.format, row.url, row.secret, True
        )

    async def post(
        self,
        channel: ChannelRef,
        content: Outgoing,
        *,
        key: str,
        pace: Pace = unpaced,
        attachment: Attachment | None = None,
        earlier: Earlier | None = None,
    ) -> str:
        target = await self._target(channel)
        if earlier is not None:
            return earlier.message_id
        await self._send(target, content, key=key, replaces=None, chart=attachment, pace=pace)
        return key

    async def edit(
        self, channel: ChannelRef, message_id: str, content: Outgoing, *, pace: Pace = unpaced
    ) -> None:
        target = await self._target(channel)
        digest = hashlib.sha256(content.to_json().encode()).hexdigest()[:16]
        key = f"{message_id}.edit-{digest}"
        replaces = message_id if target.format == "json" else None
        await self._send(target, content, key=key, replaces=replaces, chart=None, pace=pace)

    async def find_posted(
        self,
        channel: ChannelRef,
        keys: Collection[str],
        *,
        since: datetime,
        pace: Pace = unpaced,
    ) -> dict[str, Earlier]:
        """Nothing: a webhook cannot be read back (the receiver deduplicates instead)."""
        return {}

    def body(
        self,
        target: Resolved,
        content: Outgoing,
        *,
        key: str,
        replaces: str | None,
        chart: Attachment | None,
    ) -> bytes:
        """What goes to ``target`` (:mod:`.formats`)."""
        if target.format == "slack":
            return slack_body(content)
        if target.format == "teams":
            return teams_body(content)
        cap = self.settings.max_body
        now = self.clock.now()
        return json_body(
            content,
            key=key,
            replaces=replaces,
            now=now,
            page_base=self.settings.page_base,
            chart=chart,
            cap=cap,
        )

    async def _send(
        self,
        target: Resolved,
        content: Outgoing,
        *,
        key: str,
        replaces: str | None,
        chart: Attachment | None,
        pace: Pace,
    ) -> None:
        body = self.body(target, content, key=key, replaces=replaces, chart=chart)
        if len(body) > self.settings.max_body:
            raise PermanentDeliveryError(
                f"webhook {target.name}: a body of {len(body)} bytes is over [webhook] max_body"
            )
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": USER_AGENT,
            IDEMPOTENCY_HEADER: key,
        }
        async with pace(Route(POST, target.name), delivers=True):
            if target.secret is not None:
                now = unix(self.clock.now())
                headers.update(signed_headers(target.secret, now, body, path=URL(target.url).path))
            try:
                http = self.chat_http if target.chat else self.http
                resp = await http.post(target.url, body, headers=headers)
            except EgressRefused as exc:
                raise PermanentDeliveryError(f"webhook {target.name}: {exc}") from None
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise self._failed(target, f"no answer ({type(exc).__name__})") from None
            try:
                status = resp.status
                said = (await resp.content.read(ANSWER_READ)).decode("utf-8", "replace")
                retry_after = retry_after_header(dict(resp.headers))
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise self._failed(target, f"answer cut off ({type(exc).__name__})") from None
            finally:
                resp.release()
            self._judge(target, status, said, retry_after, editing=replaces is not None)

    def _judge(
        self,
        target: Resolved,
        status: int,
        said: str,
        retry_after: float | None,
        *,
        editing: bool,
    ) -> None:
        """Raise what ``status`` means (nothing for a 2xx)."""
        shown = " ".join(said.split())[:200]
        why = f"webhook {target.name} answered {status}" + (f": {shown}" if shown else "")
        if 200 <= status < 300:
            self.failures.pop(target.name, None)
            return
        if status == 429:
            raise RateLimited(why, retry_after=retry_after if retry_after else 1.0, refused=True)
        if status >= 500:
            raise self._failed(target, why, retry_after)
        if editing and status in (404, 410):
            raise MessageGone(why)
        if 300 <= status < 400:
            why += " (a redirect: tallybot follows none; configure the final address)"
        raise PermanentDeliveryError(why, fix="Check the target's address and secret.")

    def _failed(
        self, target: Resolved, why: str, retry_after: float | None = None
    ) -> TransientDeliveryError | PermanentDeliveryError:
        """A failure of ``target`` worth retrying, unless it has failed too often in a row:
        then the target is disabled (the core tells the admins, once per place and cause)."""
        n = self.failures[target.name] = self.failures.get(target.name, 0) + 1
        if n < self.settings.disable_after:
            return TransientDeliveryError(why, retry_after=retry_after)
        cause = f"webhook target {target.name} failed {n} times in a row"
        gone = PermanentDeliveryError(
            f"{cause} (last: {why}); disabled",
            cause=cause,
            fix="Fix the receiver, then restart tallybot or subscribe the target again.",
        )
        self.disabled[target.name] = gone
        log.error("%s: disabled", cause)
        return gone
