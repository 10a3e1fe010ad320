"""The public pages' server: its own listener (``[web] host`` and ``port``), nothing else on it.

==================================  =============================================================
``GET /c/<id>``                     the count's page (HTML; ``?embed=1``: the compact variant
                                    for live blogs, framed only by ``[web] embed_origins``)
``GET /c/<id>/events``              live updates (Server-Sent Events; ``Last-Event-ID`` or
                                    ``?last=SEQ`` catches up on what was missed)
``GET /c/<id>/chart-<seq>.svg``     the chart after update ``seq`` (the page's), and ``.png``
                                    (the chat's, for link previews); ``chart-<seq>-narrow.svg``:
                                    the same, narrow, for a phone (the page's ``<picture>``)
``GET /c/<id>/feed.atom``           the count's significant updates as an Atom feed (RFC 4287;
                                    at most :data:`~bot.web.documents.FEED_ENTRIES`)
``GET /c/<id>.json``                the count's standing as JSON (:mod:`bot.web.standing`)
``GET /static/<file>``              the page's script and style
==================================  =============================================================

A count the public lookup does not call public gets the very answer a count that does not
exist gets, and so does every other address (404). No cookies are set; every answer carries a
strict Content-Security-Policy (no inline script, nothing from elsewhere).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.base.lifecycle import Closing
from bot.charts.chart import ChartCache, render_chart_svg, render_chart_svg_narrow
from bot.cluster.lease import shared
from bot.errors import ConfigError, RequestError, StoreError
from bot.settings.web import WebConfig
from bot.web import atom, standing
from bot.web.broadcast import Broadcaster, Limits
from bot.web.documents import Document, Documents
from bot.web.events import Counts, chart_path
from bot.web.feed import Feed
from bot.web.pages import (
    COMMON_HEADERS,
    NOT_FOUND,
    NOT_FOUND_POLICY,
    SVG_POLICY,
    Pages,
    page_policy,
)
from bot.web.stream import stream

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PING_SECONDS = 15.0
SWEEP_SECONDS = 5.0
CHART_TYPES = {"svg": "image/svg+xml", "png": "image/png"}


def not_found() -> web.Response:
    return web.Response(
        text=NOT_FOUND,
        status=404,
        content_type="text/html",
        headers={"Content-Security-Policy": NOT_FOUND_POLICY, "Cache-Control": "no-cache"},
    )


@web.middleware
async def plain_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every unknown address and method is the same 404; the store failing is a 503."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return not_found()
    except StoreError as exc:
        log.warning("public page not served: the store failed: %s", exc)
        return web.Response(text="The figures cannot be read just now.", status=503)


async def security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """The headers every answer carries; a stream of events (never a document, and one of
    thousands held open) carries only what it needs, to keep each viewer small."""
    response.headers.popall("Set-Cookie", None)
    if response.content_type == "text/event-stream":
        response.headers["X-Content-Type-Options"] = "nosniff"
        return
    for name, value in COMMON_HEADERS.items():
        response.headers.setdefault(name, value)
    response.headers.setdefault("Content-Security-Policy", NOT_FOUND_POLICY)


class WebServer(Closing):
    """The public pages of a running bot; started and stopped with ``async with``."""

    def __init__(self, counts: Counts, settings: WebConfig, *, charts: ChartCache) -> None:
        self.counts = counts
        self.settings = settings
        self.charts = charts
        self.svgs = ChartCache(
            16, render=render_chart_svg, process=charts.process, failed=charts.failed
        )
        self.narrow_svgs = ChartCache(
            16, render=render_chart_svg_narrow, process=charts.process, failed=charts.failed
        )
        self.pages = Pages()
        self.documents = Documents(counts)
        self.broadcaster = Broadcaster(
            counts.event,
            Limits(
                per_ip=settings.streams_per_ip,
                total=settings.max_streams,
                lifetime=settings.stream_minutes * 60.0,
            ),
        )
        self.web = web.Application(middlewares=[plain_errors])
        self.web.on_response_prepare.append(security_headers)
        self.web.add_routes(
            [
                web.get(r"/c/{count_id:[^{}/]+}.json", self._standing),  # before the page's
                web.get("/c/{count_id}", self._page),
                web.get("/c/{count_id}/feed.atom", self._feed),
                web.get("/c/{count_id}/events", self._events, allow_head=False),
                web.get(r"/c/{count_id}/chart-{seq:\d{1,12}}.{ext:svg|png}", self._chart),
                web.get(r"/c/{count_id}/chart-{seq:\d{1,12}}-narrow.{ext:svg}", self._chart),
                web.get("/static/{name}", self._static),
            ]
        )
        self.feed: Feed | None = None
        """On PostgreSQL, the tallies other instances accept (started with the server)."""
        if shared(counts.db):
            self.feed = Feed(counts.db, self.broadcaster, counts.latest)
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.port: int | None = None

    @property
    def url(self) -> str:
        """``http://host:port`` of the running server."""
        if self.port is None:
            raise RuntimeError("the web server has not started")
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.settings.host, self.settings.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    @property
    def public_url(self) -> str:
        """Where the public reaches the pages: ``[web] public_url``, else this listener."""
        return self.settings.public_url or self.url

    def page_url(self, count_id: str) -> str:
        return f"{self.public_url}/c/{count_id}"

    def accepted(self, count_id: str, seq: int) -> None:
        """The pipeline's hook: a tally was accepted."""
        self.broadcaster.accepted(count_id, seq)

    async def aopen(self) -> None:
        runner = web.AppRunner(
            self.web,
            access_log=None,
            shutdown_timeout=2.0,
            keepalive_timeout=15.0,
            handler_cancellation=True,  # a viewer that leaves ends its stream at once
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self.settings.host, self.settings.port).start()
        except OSError as exc:
            await runner.cleanup()
            where = f"{self.settings.host}:{self.settings.port}"
            raise ConfigError(
                f"[web]: cannot listen on {where} ({exc.strerror or exc}); change host or port"
            ) from exc
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self._tasks = [
            asyncio.create_task(self.broadcaster.run(), name="web-broadcast"),
            asyncio.create_task(self._tick(), name="web-tick"),
        ]
        if self.feed is not None:
            self._tasks.append(asyncio.create_task(self.feed.run(), name="web-feed"))
        log.info("public pages listening", extra={"url": self.url})

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        self.broadcaster.close()
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self.documents.settle()
        await self.counts.settle()

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        last_ping = loop.time()
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            now = loop.time()
            self.broadcaster.sweep(now)
            if now - last_ping >= PING_SECONDS:
                await self.broadcaster.ping()
                last_ping = now

    # -- routes ------------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        page = await self.counts.page(request.match_info["count_id"])
        if page is None:
            return not_found()
        embed = request.query.get("embed") == "1"
        origins = self.settings.embed_origins if embed else ()
        count_id = page.count.id
        seq = page.view.seq
        html = self.pages.render(
            "page.html",
            v=page.view,
            history=page.history,
            ahead=page.ahead,
            embed=embed,
            page_url=self.page_url(count_id),
            image_url=f"{self.public_url}{chart_path(count_id, seq, 'png')}" if seq else "",
            events_url=f"/c/{count_id}/events",
            feed_url=f"{self.page_url(count_id)}/feed.atom",
        )
        headers = {"Content-Security-Policy": page_policy(origins), "Cache-Control": "no-cache"}
        if not origins:
            headers["X-Frame-Options"] = "DENY"
        return web.Response(text=html, content_type="text/html", headers=headers)

    async def _feed(self, request: web.Request) -> web.Response:
        count_id = request.match_info["count_id"]
        found = await self.documents.feed(count_id, self.page_url(count_id))
        return self._document(request, found, f"{atom.CONTENT_TYPE}; charset=utf-8")

    async def _standing(self, request: web.Request) -> web.Response:
        count_id = request.match_info["count_id"]
        found = await self.documents.standing(count_id, self.page_url(count_id))
        return self._document(request, found, f"{standing.CONTENT_TYPE}; charset=utf-8")

    def _document(
        self, request: web.Request, found: Document | None, content_type: str
    ) -> web.Response:
        """A feed or document: the same 404 as the page; 304 when the reader has these bytes."""
        if found is None:
            return not_found()
        headers = {"Cache-Control": "no-cache", "ETag": found.etag}
        if request.headers.get("If-None-Match") == found.etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=found.body, headers={**headers, "Content-Type": content_type})

    async def _events(self, request: web.Request) -> web.StreamResponse:
        try:
            return await stream(
                request, self.counts, self.broadcaster, forwarded_for=self.settings.forwarded_for
            )
        except RequestError as exc:
            headers = {"Retry-After": "5"} if exc.status in (429, 503) else {}
            return web.Response(text=str(exc), status=exc.status, headers=headers)

    async def _chart(self, request: web.Request) -> web.Response:
        count = await self.counts.visible(request.match_info["count_id"])
        seq, ext = int(request.match_info["seq"]), request.match_info["ext"]
        if count is None:
            return not_found()
        if request.path.endswith("-narrow.svg"):
            cache = self.narrow_svgs
        else:
            cache = self.svgs if ext == "svg" else self.charts
        image = cache.get(count, seq)
        if image is None:  # any update's chart a page or a preview pointed at, from the store
            history = await self.counts.history(count.id, through=seq)
            if not history or history[-1].seq != seq:
                return not_found()
            image = await cache.get_or_render(count, history)
        return web.Response(
            body=image,
            content_type=CHART_TYPES[ext],
            headers={
                "Cache-Control": "public, max-age=3600",
                "Content-Security-Policy": SVG_POLICY,
            },
        )

    async def _static(self, request: web.Request) -> web.Response:
        asset = self.pages.assets.get(request.match_info["name"])
        if asset is None:
            return not_found()
        etag = f'"{asset.etag}"'
        headers = {"Cache-Control": "public, max-age=86400", "ETag": etag}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        return web.Response(
            body=asset.body, headers={**headers, "Content-Type": asset.content_type}
        )
