"""Three kinds of webhook receiver on one loopback server, each checking what it is sent as the
real one would, and doing a receiver's duties (``docs/how-to/webhooks.md``):

* ``POST /json/<target>``: tallybot's own JSON. It verifies ``X-Tallybot-Signature`` with the
  target's secret (a 401 otherwise), requires ``Idempotency-Key``, and keeps the keys it has
  taken: a repeat is answered 200 and shown no second time. An edit (``delivery.replaces``)
  replaces the message it names, or is answered 410 when that message was deleted.
* ``POST /hooks/<target>``: a Mattermost (or Slack) incoming webhook: JSON with ``text``,
  answered ``ok``; what would ping (``@name``, ``<!here>``) or link (``://``, ``www.``) is
  recorded as a ping of the message.
* ``POST /workflows/<target>``: a Teams Workflows webhook: a ``message`` with one Adaptive
  Card (``application/vnd.microsoft.card.adaptive``), answered 202.

The last two deduplicate by ``Idempotency-Key`` too, as a receiver (or a proxy in front of one)
may. Faults: ``lose_answer`` (carried out, the connection dropped before the answer),
``answers_held`` (carried out, the answer held: the sender may be killed meanwhile),
``fail_next`` (a status, nothing carried out), ``hang``, ``remove`` (410 from then on),
``deny`` (403), ``delete`` (a message gone).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from bot.errors import RequestError
from bot.ops.signing import verify
from tests.fakes.loopback.hangs import Hangs
from tests.fakes.loopback.notify import ChangeNotifier
from tests.fakes.loopback.server import LoopbackServer

ZWSP = "\u200b"
CARD = "application/vnd.microsoft.card.adaptive"
MAX_BODY = 1024 * 1024
PINGS = re.compile(r"@\w|<[!@#]|://|www\.|\]\(", re.IGNORECASE)
"""What Mattermost, Slack or Teams would read as a mention or a link."""
KINDS = ("json", "hooks", "workflows")


@dataclass
class Shown:
    """A message a receiver shows."""

    key: str
    kind: str
    target: str
    text: str
    images: int
    pings: tuple[str, ...]
    body: dict[str, Any]
    deleted: bool = False
    edits: int = 0


@dataclass
class Receiver:
    secrets: dict[str, str] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)
    shown: list[Shown] = field(default_factory=list)
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    """Every request taken: (kind, target, key)."""
    arrived: list[tuple[str, str, str]] = field(default_factory=list)
    """Every request that arrived, refused or not: (kind, target, key)."""


def _text(kind: str, body: dict[str, Any]) -> str:
    """Every text of the body a member reads, joined by new lines, as shown."""
    said = _raw(kind, body)
    if kind == "hooks":
        said = said.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return said.replace(ZWSP, "")


def _raw(kind: str, body: dict[str, Any]) -> str:
    """Every text of the body, as sent."""
    if kind == "json":
        if body.get("kind") == "notice":
            return str(body["text"])
        lines = [body["title"], body["headline"]]
        lines += [
            f"{f['label']} {f['votes_text']} {f['share_text']} {f['note']}" for f in body["figures"]
        ]
        lines += [*body["sentences"], body["footer"]]
        return "\n".join(lines)
    if kind == "hooks":
        return str(body["text"])
    card = body["attachments"][0]["content"]
    out = []
    for block in card["body"]:
        if block["type"] == "TextBlock":
            out.append(block["text"])
        elif block["type"] == "FactSet":
            out += [f"{f['title']} {f['value']}" for f in block["facts"]]
    return "\n".join(out)


def _pings(kind: str, body: dict[str, Any]) -> tuple[str, ...]:
    if kind == "json":  # data, not a chat message: nothing pings
        return ()
    return tuple(m.group(0) for m in PINGS.finditer(_raw(kind, body)))


class FakeReceivers(LoopbackServer):
    def __init__(self, *, now: Callable[[], float]) -> None:
        self.now = now
        self.r = Receiver()
        self.hangs = Hangs()
        self.answers_held = Hangs()
        """Targets whose requests are carried out, their answers held until the event is set."""
        self.changes = ChangeNotifier()
        self._lose: list[str | None] = []
        self._fail: list[tuple[str | None, int, dict[str, str]]] = []
        self._removed: set[str] = set()
        self.broken: set[str] = set()
        """Targets that answer every request 503."""
        self.slow: dict[str, float] = {}
        """Targets that answer only so many seconds (real time) after carrying a request out."""
        self._denied: set[str] = set()
        self.bugs: list[str] = []
        self.taken_at: dict[str, list[float]] = {}
        """When (``now``) each target took each request, in order."""

    def application(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/{kind}/{target}", self._take)
        return app

    def url(self, kind: str, target: str) -> str:
        return f"http://127.0.0.1:{self.port}/{kind}/{target}"

    def add_secret(self, target: str, secret: str) -> None:
        self.r.secrets[target] = secret

    # ------------------------------------------------------------------ faults

    def lose_answer(self, target: str | None = None) -> None:
        self._lose.append(target)

    def fail_next(
        self,
        times: int = 1,
        status: int = 503,
        retry_after: int | None = None,
        target: str | None = None,
    ) -> None:
        """The next ``times`` requests (to ``target``, or any) answered ``status``."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        self._fail += [(target, status, headers)] * times

    def remove(self, target: str) -> None:
        self._removed.add(target)

    def deny(self, target: str) -> None:
        self._denied.add(target)

    def delete(self, key: str) -> None:
        for s in self.r.shown:
            if s.key == key:
                s.deleted = True
        self.changes.notify()

    def seen(self, target: str) -> list[Shown]:
        return [s for s in self.r.shown if s.target == target and not s.deleted]

    async def wait_for(self, check: Callable[[], bool], timeout: float = 10) -> None:  # noqa: ASYNC109
        await self.changes.wait_for(check, timeout)

    # ------------------------------------------------------------------ the receiver

    async def _take(self, request: web.Request) -> web.StreamResponse:
        kind, target = request.match_info["kind"], request.match_info["target"]
        if kind not in KINDS:
            return web.Response(status=404)
        await self.hangs.wait(target)
        raw = await request.read()
        key = request.headers.get("Idempotency-Key")
        if not key:
            self.bugs.append(f"{kind}/{target}: no Idempotency-Key")
            return web.Response(status=400, text="Idempotency-Key is required")
        self.r.arrived.append((kind, target, key))
        if target in self._removed:
            return web.Response(status=410, text="this webhook was removed")
        if target in self._denied:
            return web.Response(status=403, text="forbidden")
        if target in self.broken:
            return web.Response(status=503, text="broken")
        failing = [f for f in self._fail if f[0] in (None, target)]
        if failing:
            self._fail.remove(failing[0])
            _, status, headers = failing[0]
            return web.Response(status=status, headers=headers, text="down for a while")
        if kind == "json":
            try:
                verify(self.r.secrets[target], request.headers, raw, now=self.now(),
                       method=request.method, path=request.path)  # fmt: skip
            except RequestError as exc:
                return web.Response(status=401, text=str(exc))
        body = json.loads(raw)
        problem = self._check(kind, body)
        if problem:
            self.bugs.append(f"{kind}/{target}: {problem}")
            return web.Response(status=400, text=problem)
        self.r.requests.append((kind, target, key))
        self.taken_at.setdefault(target, []).append(self.now())
        answer = self._carry_out(kind, target, key, body)
        self.changes.notify()
        await self.answers_held.wait(target)
        if target in self.slow:
            await asyncio.sleep(self.slow[target])
        if target in self._lose or None in self._lose:
            self._lose.remove(target if target in self._lose else None)
            assert request.transport is not None
            request.transport.close()  # carried out, the answer never reaches the sender
        return answer

    def _check(self, kind: str, body: Any) -> str | None:
        if not isinstance(body, dict):
            return "the body is not a JSON object"
        if kind == "hooks" and not isinstance(body.get("text"), str):
            return "text is required"
        if kind == "workflows":
            atts = body.get("attachments")
            if body.get("type") != "message" or not isinstance(atts, list) or len(atts) != 1:
                return "a message with one attachment is expected"
            card = atts[0].get("content", {})
            if atts[0].get("contentType") != CARD or card.get("type") != "AdaptiveCard":
                return "the attachment must be an Adaptive Card"
        return None

    def _carry_out(self, kind: str, target: str, key: str, body: dict[str, Any]) -> web.Response:
        ok = {"json": 200, "hooks": 200, "workflows": 202}[kind]
        if key in self.r.keys:  # a repeat: taken before, not shown again
            return web.Response(status=ok, text="ok")
        replaces = body.get("delivery", {}).get("replaces") if kind == "json" else None
        if replaces is not None:
            old = next((s for s in self.r.shown if s.key == replaces), None)
            if old is None or old.deleted:
                return web.Response(status=410, text="no such message")
            old.text, old.body, old.edits = _text(kind, body), body, old.edits + 1
            self.r.keys.add(key)
            return web.Response(status=ok, text="ok")
        images = int("chart" in body) if kind == "json" else 0
        shown = Shown(key, kind, target, _text(kind, body), images, _pings(kind, body), body)
        self.r.shown.append(shown)
        self.r.keys.add(key)
        return web.Response(status=ok, text="ok")

    def check(self, exc: BaseException | None) -> None:
        if self.bugs and exc is None:
            raise AssertionError(
                "the webhook receivers were sent what they refuse: " + "; ".join(self.bugs)
            )
