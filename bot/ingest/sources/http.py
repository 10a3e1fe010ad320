"""HTTP GET for document sources: one aiohttp session per source, conditional requests, a body
size cap, and aiohttp errors translated to source errors at this edge.

Shared by :mod:`bot.ingest.sources.http_json` and :mod:`bot.ingest.sources.http_csv`. Their common
config keys:

``url`` (required)
    ``http://`` or ``https://`` address of the document.
``timeout`` (default 10)
    Seconds for the whole request, body included. A timeout is a TransientSourceError.
``max_bytes`` (default 1048576)
    Largest body accepted; a larger one is a PermanentSourceError "body larger than N bytes".
``headers`` (default none)
    Extra request headers that are not secret, e.g. ``{ "Accept-Language" = "en" }``.
    ``Authorization``, ``Proxy-Authorization`` and ``Cookie`` are refused here.
``headers_from_env`` (default none)
    Header name to the name of an environment variable holding its value, e.g.
    ``{ Authorization = "FEED_TOKEN" }``; the variable must be set when the config is loaded.
    The secret itself never goes in the config file.

Responses: 2xx is read; 304 means "not modified"; 408, 429 and 5xx are transient (with the
server's Retry-After kept on the error as ``retry_after``); other statuses are permanent.
The ETag and Last-Modified of the last body read *successfully* are sent back as If-None-Match
and If-Modified-Since.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

import aiohttp
from yarl import URL

from bot.base.clock import Clock
from bot.base.egress import EgressPolicy, GuardedSession
from bot.base.http_body import read_capped
from bot.base.lifecycle import Closing
from bot.base.retry import parse_retry_after
from bot.domain.model import Count, Tally
from bot.errors import ConfigError, PermanentSourceError, TransientSourceError
from bot.ingest.sources.changes import ChangeFilter
from bot.ingest.sources.mapping import FieldMap, StateValues

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_BYTES = 1_048_576
USER_AGENT = "tallybot/0.1 (live vote-count updates)"
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Headers whose values must come from the environment (``headers_from_env``)."""


class HttpTransientError(TransientSourceError):
    """A transient HTTP failure; ``status`` is None for timeouts and connection errors."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How to GET a document; see the module docstring for each setting."""

    url: str
    timeout: float = DEFAULT_TIMEOUT
    max_bytes: int = DEFAULT_MAX_BYTES
    headers: Mapping[str, str] = field(default_factory=dict)
    egress: EgressPolicy | None = None
    """For a URL typed in chat: fetched only through :class:`~bot.base.egress.GuardedSession` under
    this policy (never inside the operator's network); None: the operator's own URL."""


@dataclass(frozen=True, slots=True)
class Response:
    """A body that was read, with the validators to send back next time."""

    data: bytes
    content_type: str | None
    etag: str | None
    last_modified: str | None


def _parsed(url: str) -> URL | str:
    try:
        return URL(url)
    except (ValueError, TypeError):
        return url


def public_url(url: str) -> str:
    """``url`` fit for messages: no user info, query or fragment (they may hold tokens)."""
    try:
        parsed = URL(url)
        return str(parsed.with_user(None).with_query(None).with_fragment(None))
    except (ValueError, TypeError):
        return "<invalid url>"


class HttpDocument(Closing):
    """A document fetched over HTTP and read into tallies by a ``parse`` function.

    Owns the aiohttp session (opened by ``async with``), the conditional-request validators
    and the :class:`ChangeFilter`.
    """

    def __init__(self, options: HttpOptions, *, clock: Clock, accept: str) -> None:
        if options.timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {options.timeout}")
        if options.max_bytes < 1:
            raise ConfigError(f"max_bytes must be >= 1, got {options.max_bytes}")
        self.options = options
        self.label = public_url(options.url)
        self._clock = clock
        self._headers = {"User-Agent": USER_AGENT, "Accept": accept, **options.headers}
        self._session: aiohttp.ClientSession | None = None
        self._guarded: GuardedSession | None = None
        self._etag: str | None = None
        self._last_modified: str | None = None
        self._changes = ChangeFilter()
        self._url: URL | str = _parsed(options.url)
        """The address as yarl reads it, once (a thousand feeds' addresses overflow yarl's own
        cache: each poll would read its address again); as given when it does not read, for
        aiohttp to refuse at the first request as before."""

    async def aopen(self) -> None:
        """Open the session."""
        if self._session is not None or self._guarded is not None:
            raise RuntimeError(f"{self.label}: already open")
        timeout = aiohttp.ClientTimeout(total=self.options.timeout)
        if self.options.egress is not None:
            guarded = GuardedSession(self.options.egress, timeout=timeout, headers=self._headers)
            await guarded.aopen()
            self._guarded = guarded
            return
        self._session = aiohttp.ClientSession(timeout=timeout, headers=self._headers)

    async def aclose(self) -> None:
        """Close the session."""
        session, self._session = self._session, None
        guarded, self._guarded = self._guarded, None
        if session is not None:
            await session.close()
        if guarded is not None:
            await guarded.aclose()

    async def fetch(self, parse: Callable[[Response], Tally]) -> Tally | None:
        """GET the document and ``parse`` it; None when it is not modified or reads the same."""
        response = await self.get()
        if response is None:
            return None
        if self._changes.same_body(response.data):
            self._remember(response)
            return None
        tally = parse(response)
        self._remember(response)
        return self._changes.accept(response.data, tally)

    def forget(self) -> None:
        """Forget the validators and the last body: the next GET is unconditional and its
        tally is returned even if it reads the same."""
        self._etag = None
        self._last_modified = None
        self._changes.forget()

    def _remember(self, response: Response) -> None:
        self._etag = response.etag
        self._last_modified = response.last_modified

    async def get(self) -> Response | None:
        """One conditional GET: the body, or None for 304 Not Modified."""
        if self._session is None and self._guarded is None:
            raise RuntimeError(f"{self.label}: fetch() outside 'async with'")
        conditional: dict[str, str] = {}
        if self._etag is not None:
            conditional["If-None-Match"] = self._etag
        if self._last_modified is not None:
            conditional["If-Modified-Since"] = self._last_modified
        what = f"GET {self.label}"
        try:
            async with self._open(conditional) as resp:
                if resp.status == 304:
                    return None
                self._check_status(resp, what)
                data = await self._read(resp, what)
                return Response(
                    data=data,
                    content_type=resp.headers.get("Content-Type"),
                    etag=resp.headers.get("ETag"),
                    last_modified=resp.headers.get("Last-Modified"),
                )
        except TimeoutError as exc:
            raise HttpTransientError(
                f"{what}: no complete answer within {self.options.timeout:g} s"
            ) from exc
        except aiohttp.TooManyRedirects as exc:
            raise PermanentSourceError(f"{what}: too many redirects") from exc
        except aiohttp.InvalidURL as exc:
            raise PermanentSourceError(f"{what}: invalid URL ({exc})") from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            raise PermanentSourceError(f"{what}: TLS certificate rejected ({exc})") from exc
        except aiohttp.ClientPayloadError as exc:
            raise HttpTransientError(f"{what}: the body was cut short ({exc})") from exc
        except aiohttp.ClientError as exc:
            raise HttpTransientError(f"{what}: {type(exc).__name__}: {exc}") from exc

    def _open(
        self, headers: Mapping[str, str]
    ) -> AbstractAsyncContextManager[aiohttp.ClientResponse]:
        if self._guarded is not None:
            return self._guarded.get(self._url, headers=headers)
        assert self._session is not None
        return self._session.get(self._url, headers=headers)

    def _check_status(self, resp: aiohttp.ClientResponse, what: str) -> None:
        status = resp.status
        if 200 <= status < 300:
            return
        reason = f"HTTP {status} {resp.reason or ''}".rstrip()
        if status in (408, 429) or 500 <= status < 600:
            retry_after = parse_retry_after(resp.headers.get("Retry-After"), now=self._clock.now())
            hint = "" if retry_after is None else f" (retry after {retry_after:g} s)"
            raise HttpTransientError(
                f"{what}: {reason}{hint}", status=status, retry_after=retry_after
            )
        hint = " (check headers_from_env)" if status in (401, 403) else ""
        raise PermanentSourceError(f"{what}: {reason}{hint}")

    async def _read(self, resp: aiohttp.ClientResponse, what: str) -> bytes:
        limit = self.options.max_bytes

        def too_big(declared: int | None) -> PermanentSourceError:
            shown = "" if declared is None else f" (Content-Length {declared})"
            return PermanentSourceError(f"{what}: body larger than {limit} bytes{shown}")

        return await read_capped(
            resp.content, declared=resp.content_length, limit=limit, too_big=too_big
        )


class HttpSource(Closing):
    """What the HTTP document sources share: the mapping, the session's lifecycle and the
    conditional fetch. A subclass reads a response into a tally (``_parse``)."""

    polled = True
    accept = "*/*"

    def __init__(
        self,
        count: Count,
        options: HttpOptions,
        *,
        clock: Clock,
        fields: FieldMap | None,
        states: StateValues | None,
        name: str,
    ) -> None:
        self.name = name
        self.count = count
        self.fields = fields or FieldMap.default(count)
        self.fields.check(count, name)
        self.states = states or StateValues()
        self._clock = clock
        self._http = HttpDocument(options, clock=clock, accept=self.accept)

    @property
    def label(self) -> str:
        """The URL as shown in messages."""
        return self._http.label

    async def aopen(self) -> None:
        """Open the HTTP session."""
        await self._http.aopen()

    async def aclose(self) -> None:
        """Close the HTTP session."""
        await self._http.aclose()

    async def fetch(self) -> Tally | None:
        """GET the document; the tally, or None when nothing changed."""
        return await self._http.fetch(self._parse)

    def forget(self) -> None:
        """Read the document again at the next fetch (:meth:`HttpDocument.forget`)."""
        self._http.forget()

    def _parse(self, response: Response) -> Tally:
        raise NotImplementedError
