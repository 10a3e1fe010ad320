"""The ops server: one aiohttp server for operators, monitors and scripts.

==================================  =============================================================
``GET /healthz``                    200 ``{"status": "alive"}`` while the process serves at all
``GET /readyz``                     200 when ready, 503 when not; the body lists every check and
                                    what is wrong (:mod:`bot.ops.readiness`)
``GET /metrics``                    Prometheus text format (:mod:`bot.ops.metrics`)
``POST /api/counts/{id}/tally``     push a tally (:mod:`bot.ingest.push_body`), signed
                                    (:mod:`bot.ops.signing`)
==================================  =============================================================

Push answers, each a JSON object:

* 201 ``{"result": "accepted", "count", "seq", "headline", "events", "significant"}``;
* 200 ``{"result": "no_change", "count", "seq"}``: the figures are the ones already shown;
* 409 ``{"result": "rejected", "count", "reason", "error"}``: the detector turned it away (a
  decrease without ``"correction": true``, more ballots than received, a final count changed);
  the rejection is stored with its reason and the admins are told, as for a polled tally;
* 409 ``{"result": "replayed", "count", "reason": "replayed", "error"}``: this very request
  (its signature) was taken in before, inside its five minutes, and its figures are no longer
  the ones shown: a replay, refused and audited, nothing stored, nobody alerted. (The same
  request while its figures stand answers 200 "no change": a sender retrying a lost answer.)
* A body may also schedule the count: ``"starts"`` or ``"resumes"`` (a time with its offset or
  zone) and ``"remind_before"`` (minutes); put in the store, audited, before the tally is taken
  in (so a pushed pause says when the count resumes); a time in the past, one with no offset or
  zone, or a schedule on a final count is a 422 and nothing is taken in.
* 400 the body is not JSON; 401 a missing or bad signature, or a timestamp more than 5 minutes
  off; 404 no such count; 413 the body is larger than ``[server] max_body_bytes``; 422 the
  body is not a valid tally (an unknown or missing choice, a negative or fractional figure);
  503 push is off (the secret is not set) or the store failed. Each ``{"error": "..."}``.

Other routes (such as Slack's HTTP mode) can share the server: call :meth:`OpsServer.add_routes`
or :meth:`OpsServer.add_subapp` before it starts. ``App`` mounts, by itself, the routes every
adapter returns from ``http_routes()`` (``bot.delivery.adapter.Adapter``; none by default), e.g.::

    def http_routes(self) -> list[web.RouteDef]:
        return [web.post("/slack/events", self._http)]
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from aiohttp import web

from bot.base.clock import Clock
from bot.base.http_body import read_capped
from bot.base.lifecycle import Closing
from bot.cluster import Instance
from bot.domain.detect import Accepted, NoChange, Rejected
from bot.domain.model import OPERATOR, Count, TallyState
from bot.domain.subscription import Platform
from bot.errors import CommandError, ConfigError, Replayed, RequestError, StoreError
from bot.ingest.pipeline import Ingested, Pipeline
from bot.ingest.push_body import read_push, read_schedule
from bot.ingest.sources.health import SourceHealth
from bot.ops.metrics import CONTENT_TYPE, Metrics
from bot.ops.owners import bearer, key_of, operator_only, read_new_count, tenant_count
from bot.ops.readiness import Readiness
from bot.ops.signing import verify
from bot.settings.loader import ServerConfig
from bot.settings.secrets import Secret
from bot.store import Database, outbox
from bot.store import audit as audit_rows
from bot.store import counts as count_rows
from bot.store import schedules as schedule_rows
from bot.store import tallies as tally_rows
from bot.store.audit import AuditEntry
from bot.store.push_receipts import Receipt

log = logging.getLogger(__name__)

PUSH_PATH = "/api/counts/{count_id}/tally"
CREATE_PATH = "/api/counts"
PUSH_ACTOR = "push"
"""The actor of a pushed tally in the audit log."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def json_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The router's own errors (404, 405) as JSON like every other answer."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = web.json_response({"error": exc.reason}, status=exc.status)
        if "Allow" in exc.headers:
            response.headers["Allow"] = exc.headers["Allow"]
        return response


@dataclass(frozen=True, slots=True)
class Served:
    """What the ops server reads of the running bot, given to it explicitly (by
    ``bot.runtime.app.App``)."""

    db: Database
    clock: Clock
    pipeline: Pipeline
    """Where a pushed tally goes."""
    metrics: Metrics
    ready: Callable[[], Awaitable[Readiness]]
    """The readiness checks (``/readyz``)."""
    platforms: Collection[Platform]
    """The platforms delivered to (the outbox depth gauge)."""
    count_ids: Sequence[str]
    """The configured counts (the time-since-change gauge)."""
    polled_health: Mapping[str, SourceHealth]
    """The health of every polled source, by count id (the stale gauge)."""
    count_changed: Callable[[str], Awaitable[None]] | None = None
    """Told of a count made through ``POST /api/counts`` (the sources follow the store)."""
    instance: Instance | None = None
    """This instance (``/healthz`` shows its id and what it holds)."""


class OpsServer(Closing):
    """The ops server of a running bot; started and stopped with ``async with``."""

    def __init__(
        self, served: Served, settings: ServerConfig, *, push_secret: Secret | None
    ) -> None:
        self.served = served
        self.settings = settings
        self.push_secret = push_secret
        self.web = web.Application(middlewares=[json_errors])
        self.web.add_routes(
            [
                web.get("/healthz", self._healthz),
                web.get("/readyz", self._readyz),
                web.get("/metrics", self._metrics),
                web.post(PUSH_PATH, self._push),
                web.post(CREATE_PATH, self._create),
            ]
        )
        self._runner: web.AppRunner | None = None
        self.port: int | None = None
        """The port listened on, once started (useful with ``port = 0``)."""

    def add_routes(self, routes: Iterable[web.AbstractRouteDef]) -> None:
        """Serve more routes (e.g. Slack's Events API endpoint); only before the server starts."""
        self._check_not_started()
        self.web.add_routes(routes)

    def add_subapp(self, prefix: str, subapp: web.Application) -> None:
        """Serve a whole aiohttp application under ``prefix``; only before the server starts."""
        self._check_not_started()
        self.web.add_subapp(prefix, subapp)

    def _check_not_started(self) -> None:
        if self._runner is not None:
            raise RuntimeError("the ops server has started: add routes before it starts")

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self.port is None:
            raise RuntimeError("the ops server has not started")
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.settings.host, self.settings.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    async def aopen(self) -> None:
        """Start listening."""
        runner = web.AppRunner(self.web, access_log=None, shutdown_timeout=5.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.settings.host, self.settings.port)
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            where = f"{self.settings.host}:{self.settings.port}"
            raise ConfigError(
                f"[server]: cannot listen on {where} ({exc.strerror or exc}); change host or port"
            ) from exc
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        log.info("ops server listening", extra={"url": self.url})

    async def aclose(self) -> None:
        """Stop listening."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- routes -------------------------------------------------------------------------------

    async def _healthz(self, request: web.Request) -> web.Response:
        body: dict[str, object] = {"status": "alive"}
        if self.served.instance is not None:
            body["instance"] = self.served.instance.holds()
        return web.json_response(body)

    async def _readyz(self, request: web.Request) -> web.Response:
        result = await self.served.ready()
        return web.json_response(result.to_json(), status=200 if result.ready else 503)

    async def _metrics(self, request: web.Request) -> web.Response:
        await self._refresh_gauges()
        return web.Response(
            body=self.served.metrics.render(), headers={"Content-Type": CONTENT_TYPE}
        )

    async def _refresh_gauges(self) -> None:
        now = self.served.clock.now()
        depth: dict[str, int] = {}
        since: dict[str, float | None] = {}
        try:
            async with self.served.db.connect() as conn:
                for platform in self.served.platforms:
                    depth[platform] = await outbox.depth(conn, platform)
                for count_id in self.served.count_ids:
                    last = await tally_rows.last(conn, count_id)
                    since[count_id] = (
                        None if last is None else (now - last.observed_at).total_seconds()
                    )
        except StoreError:
            self.served.metrics.store_failed()  # /readyz says what is wrong
            return
        stale = {
            count_id: health.is_stale for count_id, health in self.served.polled_health.items()
        }
        self.served.metrics.refresh(depth=depth, since_change=since, stale=stale)

    async def _push(self, request: web.Request) -> web.Response:
        count_id = request.match_info["count_id"]
        try:
            status, body = await self._ingest(request, count_id)
        except RequestError as exc:
            status, body = exc.status, {"error": str(exc)}
        level = logging.INFO if status < 400 else logging.WARNING
        log.log(
            level,
            "push answered %d: %s",
            status,
            body.get("result", body.get("error")),
            extra={"count": count_id, "status": status},
        )
        self.served.metrics.pushed(status)
        return web.json_response(body, status=status)

    async def _ingest(self, request: web.Request, count_id: str) -> tuple[int, dict[str, object]]:
        token = bearer(request.headers)
        receipt: Receipt | None = None
        actor = PUSH_ACTOR
        if token is not None:  # a tenant's key, for its own counts
            raw = await read_body(request, self.settings.max_body_bytes)
            key = await key_of(self.served.db, token)
            count = await tenant_count(self.served.db, count_id, key)
            actor = f"{PUSH_ACTOR} (key #{key.id} of {key.owner})"
        else:
            raw, signature, valid_until = await self._signed(request)
            count = await self._count(count_id)
            operator_only(count)
            if count.archived:
                raise RequestError(f"{count.id} is archived: it takes no tallies", status=409)
            receipt = Receipt(signature, datetime.fromtimestamp(valid_until, UTC))
        tally = read_push(raw, count, clock=self.served.clock)
        await _schedule(self.served.db, raw, count, actor, self.served.clock.now())
        try:
            result = await self.served.pipeline.ingest(
                tally, actor=actor, action="push", receipt=receipt
            )
        except Replayed as exc:
            refused = {"result": "replayed", "count": count.id, "reason": "replayed"}
            return 409, {**refused, "error": str(exc)}
        except CommandError as exc:  # the count left the store in between
            raise RequestError(str(exc), status=404) from None
        except StoreError as exc:
            raise RequestError(f"the store failed: {exc}", status=503) from None
        return answer(result)

    async def _signed(self, request: web.Request) -> tuple[bytes, str, int]:
        """The body of a request signed with the operator's push secret (401, 503 if not)."""
        if self.push_secret is None:
            raise RequestError(
                f"push ingest is off: set {self.settings.push_secret_env} to turn it on",
                status=503,
            )
        raw = await read_body(request, self.settings.max_body_bytes)
        signed = verify(
            self.push_secret.reveal(),
            request.headers,
            raw,
            now=self.served.clock.now().timestamp(),
            method=request.method,
            path=request.rel_url.raw_path,
        )
        return raw, signed.signature, signed.valid_until

    async def _create(self, request: web.Request) -> web.Response:
        try:
            status, body = await self._make(request)
        except RequestError as exc:
            status, body = exc.status, {"error": str(exc)}
        log.log(logging.INFO if status < 400 else logging.WARNING, "create answered %d", status)
        return web.json_response(body, status=status)

    async def _make(self, request: web.Request) -> tuple[int, dict[str, object]]:
        token = bearer(request.headers)
        if token is not None:
            raw = await read_body(request, self.settings.max_body_bytes)
            key = await key_of(self.served.db, token)
            owner, actor = key.owner, f"{PUSH_ACTOR} (key #{key.id} of {key.owner})"
        else:
            raw, _, _ = await self._signed(request)
            owner, actor = OPERATOR, PUSH_ACTOR
        count = read_new_count(raw, owner)
        entry = AuditEntry(
            self.served.clock.now(), actor, "create", count.id, None, raw.decode()[:2000]
        )
        try:
            async with self.served.db.begin() as conn:
                if not await count_rows.insert(conn, count, edited_by=actor):
                    raise RequestError(count_rows.taken(count.id), status=409)
                await audit_rows.record(conn, replace(entry, detail="created"))
        except StoreError as exc:
            raise RequestError(f"the store failed: {exc}", status=503) from None
        if self.served.count_changed is not None:
            await self.served.count_changed(count.id)
        return 201, {"result": "created", "count": count.id}

    async def _count(self, count_id: str) -> Count:
        try:
            async with self.served.db.connect() as conn:
                count = await count_rows.get(conn, count_id)
                known = [c.id for c in await count_rows.all_counts(conn)] if count is None else []
        except StoreError as exc:
            raise RequestError(f"the store failed: {exc}", status=503) from None
        if count is None:
            raise RequestError(
                f"unknown count {count_id[:64]!r}; counts are {', '.join(known) or 'none'}",
                status=404,
            )
        return count


async def read_body(request: web.Request, limit: int) -> bytes:
    """The request body, or RequestError 413 as soon as it is known to exceed ``limit`` bytes."""

    def too_big(declared: int | None) -> RequestError:
        return RequestError(
            f"the body is larger than {limit} bytes (set [server] max_body_bytes)", status=413
        )

    return await read_capped(
        request.content, declared=request.content_length, limit=limit, too_big=too_big
    )


def answer(result: Ingested) -> tuple[int, dict[str, object]]:
    """The status and JSON body for what became of a pushed tally."""
    d = result.detection
    count_id = result.tally.count_id
    if isinstance(d, Rejected):
        return 409, {
            "result": "rejected",
            "count": count_id,
            "reason": d.reason.value,
            "error": d.detail,
        }
    if isinstance(d, NoChange):
        seq = result.previous.seq if result.previous is not None else None
        return 200, {"result": "no_change", "count": count_id, "seq": seq}
    assert isinstance(d, Accepted)
    assert result.message is not None
    return 201, {
        "result": "accepted",
        "count": count_id,
        "seq": result.tally.seq,
        "headline": result.message.headline,
        "events": [e.kind.value for e in d.events],
        "significant": d.significant,
    }


async def _schedule(db: Database, raw: bytes, count: Count, actor: str, now: datetime) -> None:
    """The schedule a push gives its count, put in the store and audited (422: none on a count
    that is final)."""
    schedule = read_schedule(raw, count, now)
    if schedule is None:
        return
    async with db.begin() as conn:
        last = await tally_rows.last(conn, count.id)
        if last is not None and last.state is TallyState.FINAL:
            raise RequestError(f"{count.id} is final: a final count is not scheduled", status=422)
        before = await schedule_rows.get(conn, count.id)
        stored = await schedule_rows.put(conn, schedule, by=actor, at=now)
        old = "" if before is None else f"{before.kind} {before.at.isoformat()}"
        new = f"{stored.kind} {stored.at.isoformat()}"
        await audit_rows.record(conn, AuditEntry(now, actor, "schedule", count.id, old, new))
