"""The REST front door: routing, auth, rate limits, injected failures, recording, headers."""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, hdrs, web
from aiohttp.multipart import content_disposition_filename, parse_content_disposition

from tests.fakes.loopback.limits import FixedWindow, ceil_ms

from .models import JSON, Failure, RecordedAttachment, RecordedRequest
from .state import FakeDiscord

API_PREFIX = "/api/v10"
GENERIC_LIMIT = (50, 1.0)


class ApiError(Exception):
    """Raised by a handler to answer with Discord's error JSON."""

    def __init__(self, status: int, code: int, message: str, errors: JSON | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: JSON = {"message": message, "code": code}
        if errors is not None:
            self.body["errors"] = errors


def form_error(body: JSON) -> ApiError:
    return ApiError(400, 50035, body["message"], body["errors"])


@dataclass
class Upload:
    index: int
    filename: str
    content_type: str | None
    data: bytes


@dataclass
class Ctx:
    request: web.Request
    params: dict[str, str]
    body: Any
    uploads: list[Upload]
    record: RecordedRequest

    def query_flag(self, name: str) -> bool:
        return self.request.query.get(name, "").lower() in ("1", "true")


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # None and status 204: no body


Handler = Callable[["FakeDiscord", Ctx], Awaitable[Reply]]


@dataclass
class Route:
    method: str
    template: str  # e.g. "/channels/{channel_id}/messages"
    handler: Handler
    auth: bool = True  # bot token required, counts against the global limit
    major: str | None = None  # template params forming the bucket's major parameter
    limits: str = "generic"  # "generic", "messages" or "interaction"
    pattern: re.Pattern[str] = field(init=False)
    bucket_hash: str = field(init=False)

    def __post_init__(self) -> None:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.template)
        self.pattern = re.compile(regex + "$")
        seed = f"{self.method} {self.template}".encode()
        self.bucket_hash = hashlib.md5(seed, usedforsecurity=False).hexdigest()


def json_response(status: int, body: Any, headers: dict[str, str]) -> web.Response:
    if body is None and status == 204:
        return web.Response(status=status, headers=headers)
    data = json.dumps(body, separators=(",", ":")).encode()
    # Exactly "application/json": discord.py compares the header verbatim.
    return web.Response(
        status=status, body=data, headers={**headers, "Content-Type": "application/json"}
    )


def _epoch_reset(reset_after: float) -> str:
    return f"{time.time() + reset_after:.3f}"


def bucket_headers(route: Route, window: FixedWindow, now: float) -> dict[str, str]:
    reset_after = window.reset_after(now)
    return {
        "X-RateLimit-Limit": str(window.limit),
        "X-RateLimit-Remaining": str(window.remaining(now)),
        "X-RateLimit-Reset": _epoch_reset(reset_after),
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": route.bucket_hash,
    }


def too_many(
    retry_after: float, *, scope: str, extra: dict[str, str]
) -> tuple[JSON, dict[str, str]]:
    is_global = scope == "global"
    body: JSON = {
        "message": "You are being rate limited.",
        "retry_after": retry_after,
        "global": is_global,
    }
    headers = {
        **extra,
        "Retry-After": str(math.ceil(retry_after)),
        "X-RateLimit-Scope": scope,
    }
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    else:
        body["code"] = 0
    return body, headers


def content_type(request: web.Request) -> str:
    """``request.content_type``, read directly in the two usual cases: aiohttp parses the
    header with the email package, about a millisecond, and its cache misses on every multipart
    request (each has a boundary of its own)."""
    raw = request.headers.get(hdrs.CONTENT_TYPE)
    if raw is not None:
        head = raw.partition(";")[0].strip().lower()
        if head in ("multipart/form-data", "application/json"):
            return head
    return request.content_type


@functools.lru_cache(maxsize=64)
def part_names(disposition: str | None) -> tuple[str | None, str | None]:
    """A part's ``(name, filename)`` (``BodyPartReader.name``, ``.filename``): aiohttp parses
    the Content-Disposition afresh for each, a third of a millisecond, and discord.py sends the
    same few again and again."""
    _, params = parse_content_disposition(disposition)
    return content_disposition_filename(params, "name"), content_disposition_filename(
        params, "filename"
    )


async def parse_body(request: web.Request) -> tuple[Any, list[Upload]]:
    ctype = content_type(request)
    if ctype == "multipart/form-data":
        body: Any = None
        uploads: list[Upload] = []
        reader = await request.multipart()
        while True:
            part = await reader.next()
            if part is None:
                break
            if not isinstance(part, BodyPartReader):
                continue
            name, filename = part_names(part.headers.get(hdrs.CONTENT_DISPOSITION))
            name = name or ""
            raw = await part.read()
            if filename is not None:
                match = re.fullmatch(r"files\[(\d+)\]", name)
                index = int(match.group(1)) if match else len(uploads)
                ptype = part.headers.get("Content-Type")
                uploads.append(Upload(index, filename, ptype, bytes(raw)))
            elif name == "payload_json":
                body = json.loads(bytes(raw).decode())
            else:
                body = body if body is not None else {}
                body[name] = bytes(raw).decode()
        return body, uploads
    raw = await request.read()
    if not raw:
        return None, []
    if ctype != "application/json":
        raise ApiError(400, 50035, "Invalid Form Body", {"_errors": [{"code": "CONTENT_TYPE"}]})
    return json.loads(raw), []


def recorded_files(uploads: list[Upload]) -> list[RecordedAttachment]:
    return [
        RecordedAttachment(u.index, u.filename, len(u.data), u.content_type, u.data)
        for u in uploads
    ]


async def dispatch(fake: FakeDiscord, request: web.Request, routes: list[Route]) -> web.Response:
    """Answer one REST request the way Discord's edge would."""
    path = request.path[len(API_PREFIX) :] if request.path.startswith(API_PREFIX) else request.path
    now = fake.clock()
    record = RecordedRequest(request.method, path, dict(request.query), None, [], now)
    fake.request_count += 1
    if fake.record:
        fake.requests.append(record)
    base = {"Via": "1.1 google"}
    try:
        status, body, headers = await _answer(fake, request, routes, path, record, now)
    except ApiError as err:
        status, body, headers = err.status, err.body, {}
    except Exception as exc:
        if isinstance(exc, ConnectionResetError) or request.transport is None:
            # The client went away before its body was in (a kill -9 mid-upload): nothing was
            # done and no one is there to answer; nginx's "client closed request".
            record.status = 499
            fake.notify()
            raise web.HTTPBadRequest() from None
        # A bug in the fake: answer 500 and fail the test at exit.
        fake.internal_errors.append(exc)
        status, body, headers = 500, {"message": f"fake internal error: {exc!r}", "code": 0}, {}
    headers = {**base, **headers}
    record.status, record.response, record.response_headers = status, body, headers
    if status == 429:
        fake.count_429 += 1
    if status in (401, 403, 429) and headers.get("X-RateLimit-Scope") != "shared":
        fake.count_invalid += 1
    fake.notify()
    return json_response(status, body, headers)


async def _answer(
    fake: FakeDiscord,
    request: web.Request,
    routes: list[Route],
    path: str,
    record: RecordedRequest,
    now: float,
) -> tuple[int, Any, dict[str, str]]:
    if not request.path.startswith(API_PREFIX):
        raise ApiError(404, 0, "404: Not Found")
    try:
        body, uploads = await parse_body(request)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, 50109, "The request body contains invalid JSON.") from exc
    record.json, record.files = body, recorded_files(uploads)

    route, params = _match(routes, request.method, path)
    if route.auth and request.headers.get("Authorization") != f"Bot {fake.token}":
        raise ApiError(401, 0, "401: Unauthorized")

    await fake.hangs.wait(params.get("channel_id"))
    failure = fake.take_failure(request.method, path, after_commit=False)
    if failure is not None:
        return _injected(failure)

    if route.auth:
        gw = fake.limits.global_window
        assert gw is not None
        if not gw.try_acquire(now):
            body429, headers = too_many(gw.reset_after(now), scope="global", extra={})
            return 429, body429, headers

    limit, period = fake.bucket_limits(route.limits)
    major = "+".join(params[p] for p in (route.major or "").split(",") if p)
    window = fake.limits.bucket(route.bucket_hash, major, limit, period)
    if not window.try_acquire(now):
        retry = window.reset_after(now)
        body429, headers = too_many(retry, scope="user", extra=bucket_headers(route, window, now))
        return 429, body429, headers
    headers = bucket_headers(route, window, now)

    ctx = Ctx(request, params, body, uploads, record)
    try:
        reply = await route.handler(fake, ctx)
        status, out = reply.status, reply.body
    except ApiError as err:
        status, out = err.status, err.body

    failure = fake.take_failure(request.method, path, after_commit=True)
    if failure is not None:
        return _injected(failure)
    return status, out, headers


def _match(routes: list[Route], method: str, path: str) -> tuple[Route, dict[str, str]]:
    path_matched = False
    for route in routes:
        m = route.pattern.match(path)
        if m is None:
            continue
        path_matched = True
        if route.method == method:
            return route, m.groupdict()
    if path_matched:
        raise ApiError(405, 0, "405: Method Not Allowed")
    raise ApiError(404, 0, "404: Not Found")


def _injected(failure: Failure) -> tuple[int, Any, dict[str, str]]:
    if failure.status == 429:
        body, headers = too_many(ceil_ms(failure.retry_after), scope="shared", extra={})
        return 429, body, headers
    return failure.status, {"message": f"{failure.status}: injected failure", "code": 0}, {}
