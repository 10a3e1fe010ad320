"""The egress guard: a URL typed in chat never reaches inside the operator's network.

Three checks, each where it cannot be bypassed by the one before:

1. :func:`check_url`, before any I/O: only the policy's schemes (http, https), no user info, a
   host that is a valid (IDNA) name or a canonical IP literal, numeric tricks refused
   (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``), the operator's port and host lists,
   an IP literal's address (see :func:`address_refusal`), and the names that mean this very
   machine wherever they are looked up (``localhost`` and below it, RFC 6761, and the loopback
   aliases of ``/etc/hosts``: :data:`LOOPBACK_NAMES`), so a count made in chat with one is
   refused as it is typed, as the numeric forms are.
2. :class:`GuardedResolver`, at connect: every address a name resolves to is checked, and the
   connector connects to exactly those addresses (no second lookup, no DNS cache), so a name
   that answers a public address to a check and a private one at connect (DNS rebinding) is
   caught. A name with even one refused address is refused whole.
3. The socket factory of :func:`guarded_connector`, on the address each socket connects to
   (IP literals skip the resolver in aiohttp).

:class:`GuardedSession` follows redirects itself, running :func:`check_url` on every
``Location`` (so each hop meets the scheme, host list and port rules, then checks 2 and 3), up
to ``max_redirects``, and drops secret headers when a redirect leaves the origin (``get``;
``post``, a webhook's delivery, follows none: a 3xx is the caller's to judge). It never uses
a proxy or the environment's proxy settings, and keeps no cookies.

Refused addresses (unless ``allow_private_addresses``, which only the operator's own config may
set): loopback, private (RFC 1918, fc00::/7), link-local (169.254/16 with the cloud metadata
169.254.169.254, fe80::/10), unspecified, multicast, reserved, shared (100.64/10), benchmarking,
IETF protocol blocks, Azure's host address 168.63.129.16, and the documentation ranges
(TEST-NET-1/2/3, 2001:db8::/32, 3fff::/20): no real feed lives there, and networks reuse them
inside (the machine this was written on numbers its own interface 192.0.2.2). IPv6 must be
global unicast (2000::/3) outside those blocks; IPv4-mapped, NAT64 (64:ff9b::/96) and 6to4 forms
are judged by the IPv4 address they carry; IPv4-compatible and Teredo forms are refused.
Anything Python does not call global is refused too. Ports: any, unless the policy lists them
(the address rules are what keep internal services out; a port list narrows it further).
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from ipaddress import IPv4Address, IPv6Address, ip_address, ip_network
from urllib.parse import urlsplit

import aiohttp
from aiohttp import AddrInfoType
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver
from yarl import URL

from bot.base.lifecycle import Closing
from bot.errors import ConfigError, PermanentSourceError

IPAddress = IPv4Address | IPv6Address
MAX_URL_LENGTH = 2048
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie"})
"""Dropped from a request when a redirect leaves the original origin (plus any the caller names)."""


class EgressRefused(PermanentSourceError):
    """A URL or address a source may not reach. The message is one line a chat user can act on;
    it names the host but never the user info, path or query, nor what a name resolved to
    (``detail`` has that, for the operator's log). Permanent: retrying will not change it."""

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail or message


_SCHEMES = frozenset({"http", "https"})
_REFUSED = {
    "an unspecified address": "0.0.0.0/8 ::/128",
    "a loopback address": "127.0.0.0/8 ::1/128",
    "a private address": "10.0.0.0/8 172.16.0.0/12 192.168.0.0/16 fc00::/7",
    "a shared (carrier-grade NAT) address": "100.64.0.0/10",
    "a link-local address (where cloud metadata lives)": "169.254.0.0/16 fe80::/10",
    "a site-local address": "fec0::/10",
    "an IETF protocol address": "192.0.0.0/24 192.88.99.0/24 2001::/23",
    "a documentation address": (
        "192.0.2.0/24 198.51.100.0/24 203.0.113.0/24 2001:db8::/32 3fff::/20"  # TEST-NET-1/2/3
    ),
    "a benchmarking address": "198.18.0.0/15",
    "a multicast address": "224.0.0.0/4 ff00::/8",
    "a reserved address": "240.0.0.0/4",
    "a cloud host address": "168.63.129.16/32",
}
_BLOCKS = [(ip_network(net), why) for why, nets in _REFUSED.items() for net in nets.split()]
_GLOBAL_UNICAST = ip_network("2000::/3")
_NAT64 = ip_network("64:ff9b::/96")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
_NUMERIC = re.compile(r"[0-9]+|0x[0-9a-f]*")
_SHOWN_SCHEME = re.compile(r"[a-z][a-z0-9+.-]{0,15}")
LOOPBACK_NAMES = frozenset(("localhost", "localhost.localdomain", "localhost6", "ip6-localhost"))
LOOPBACK_NAMES |= {"localhost6.localdomain6", "ip6-loopback"}
"""Names for this machine (with any name ending in ``.localhost``), refused before any lookup."""


def loopback_name(host: str) -> bool:
    """Whether the normalised name ``host`` always means this machine."""
    return host in LOOPBACK_NAMES or host.endswith(".localhost")


def address_refusal(address: str | IPAddress) -> str | None:
    """Why a source may not connect to ``address`` (e.g. "a loopback address"), or None.

    >>> address_refusal("169.254.169.254")
    'a link-local address (where cloud metadata lives)'
    >>> address_refusal("::ffff:10.0.0.1"), address_refusal("9.9.9.9")
    ('a private address', None)
    """
    try:
        ip = ip_address(address) if isinstance(address, str) else address
    except ValueError:
        return "not an IP address"
    if isinstance(ip, IPv6Address):
        if ip.scope_id:
            return "a scoped (link-local) address"
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and ip in _NAT64:
            embedded = IPv4Address(int(ip) & 0xFFFF_FFFF)
        if embedded is not None:
            return address_refusal(embedded)
    why = next((why for net, why in _BLOCKS if ip in net), None)
    if why is None and isinstance(ip, IPv6Address) and ip not in _GLOBAL_UNICAST:
        why = "a reserved address"
    return why or (None if ip.is_global else "not a public address")


def parse_host(raw: str) -> tuple[str, IPAddress | None]:
    """A URL's host (as yarl encodes it: lower case, IDNA) checked and normalised: the name
    without a trailing dot, or the IP literal with its address. ValueError says what is wrong."""
    host = raw.lower()
    if ":" in host:  # yarl only keeps a colon in a bracketed IPv6 literal
        try:
            ip6 = IPv6Address(host)
        except ValueError:
            raise ValueError("that is not a valid IPv6 address") from None
        return str(ip6), ip6
    name = host[:-1] if host.endswith(".") else host
    labels = name.split(".")
    if _NUMERIC.fullmatch(labels[-1]):
        try:
            ip = IPv4Address(name)
        except ValueError:
            raise ValueError(
                f"{name} is a numeric address in a non-standard form; "
                "write four numbers (like 93.184.215.14) or use a host name"
            ) from None
        return str(ip), ip
    if len(name) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise ValueError("that is not a valid host name")
    return name, None


def _host_pattern(entry: str) -> str:
    wildcard = entry.startswith("*.")
    try:
        host, _ = parse_host(URL.build(scheme="http", host=entry.removeprefix("*.")).raw_host or "")
    except (ValueError, UnicodeError) as exc:
        raise ConfigError(
            f"allowed_hosts: {entry!r} is not a host name or *.domain ({exc})"
        ) from exc
    return f"*.{host}" if wildcard else host


@dataclass(frozen=True, slots=True)
class EgressPolicy:
    """Where a source may fetch from. The default is the policy for URLs typed in chat.

    ``allowed_hosts``: None lets any public host through; otherwise only these hosts, each an
    exact name (``feeds.example.org``), an IP literal, or ``*.example.org`` (any name *below*
    example.org, not example.org itself). ``allow_private_addresses``: skip the address rules
    (only for URLs from the operator's own config). ``ports``: None allows any port.
    ``max_redirects``: redirects followed per fetch (0: none).
    """

    allowed_hosts: tuple[str, ...] | None = None
    allow_private_addresses: bool = False
    ports: frozenset[int] | None = None
    max_redirects: int = 5
    schemes: frozenset[str] = _SCHEMES

    def __post_init__(self) -> None:
        if not self.schemes or not self.schemes <= _SCHEMES:
            raise ConfigError(f"schemes: only http and https can be allowed, got {self.schemes}")
        if self.ports is not None and not all(0 < p < 65536 for p in self.ports):
            raise ConfigError(f"ports: each must be 1 to 65535, got {sorted(self.ports)}")
        if self.max_redirects < 0:
            raise ConfigError(f"max_redirects: must be 0 or more, got {self.max_redirects}")
        if self.allowed_hosts is not None:
            hosts = tuple(dict.fromkeys(_host_pattern(h) for h in self.allowed_hosts))
            object.__setattr__(self, "allowed_hosts", hosts)

    def check(self, url: str | URL) -> URL:
        """:func:`check_url` under this policy (for a plug-in, which sees the policy only)."""
        return check_url(url, self)

    def allows_host(self, host: str) -> bool:
        """Whether the normalised ``host`` (from :func:`parse_host`) is on the allow-list."""
        if self.allowed_hosts is None:
            return True
        return any(
            host.endswith(p[1:]) if p.startswith("*.") else host == p for p in self.allowed_hosts
        )


def check_url(url: str | URL, policy: EgressPolicy) -> URL:
    """``url`` as the URL to request, if ``policy`` lets a source fetch it; no I/O.

    Raises :class:`EgressRefused` with a one-line reason otherwise. The address a *name*
    resolves to is checked later, at connect (:class:`GuardedResolver`).
    """
    authority = url.raw_authority if isinstance(url, URL) else ""
    if isinstance(url, str):
        if len(url) > MAX_URL_LENGTH:
            raise EgressRefused(f"that address is longer than {MAX_URL_LENGTH} characters")
        if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
            raise EgressRefused("a source address must not contain spaces or control characters")
        try:
            authority = urlsplit(url).netloc
            url = URL(url)
        except (ValueError, UnicodeError):
            raise EgressRefused("that is not a valid web address") from None
    scheme = url.scheme.lower()
    if scheme not in policy.schemes:
        shown = f", not {scheme}:" if _SHOWN_SCHEME.fullmatch(scheme) else ""
        allowed = " or ".join(f"{s}://" for s in sorted(policy.schemes))
        raise EgressRefused(f"a source address must start with {allowed}{shown}")
    if not url.raw_host:
        raise EgressRefused("that address has no host name")
    if url.raw_user is not None or url.raw_password is not None or "@" in authority:
        raise EgressRefused("a source address must not contain a user name or password")
    try:
        host, ip = parse_host(url.raw_host)
    except ValueError as exc:
        raise EgressRefused(str(exc)) from None
    if not policy.allows_host(host):
        raise EgressRefused(f"{host} is not one of the hosts this bot may fetch sources from")
    port = url.port
    if not port or (policy.ports is not None and port not in policy.ports):
        allowed = (
            ""
            if policy.ports is None
            else f" (allowed: {', '.join(map(str, sorted(policy.ports)))})"
        )
        raise EgressRefused(f"port {port} is not allowed for sources{allowed}")
    if ip is None and loopback_name(host) and not policy.allow_private_addresses:
        raise EgressRefused(
            f"{host} does not resolve to a public internet address",
            detail=f"{host} is this machine (a loopback address)",
        )
    if ip is not None and not policy.allow_private_addresses:
        why = address_refusal(ip)
        if why is not None:
            shown = f"[{host}]" if ":" in host else host
            raise EgressRefused(f"{shown} is {why}; a source must be on the public internet")
    return url


class GuardedResolver(AbstractResolver):
    """Resolves with ``inner`` (aiohttp's default resolver unless given), then refuses the name
    if any address it got is refused (see :func:`address_refusal`)."""

    def __init__(self, policy: EgressPolicy, inner: AbstractResolver | None = None) -> None:
        self.policy = policy
        self._inner = inner if inner is not None else DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        """The inner resolver's answer, if every address in it may be reached."""
        answer = await self._inner.resolve(host, port, family)
        if not self.policy.allow_private_addresses:
            for result in answer:
                why = address_refusal(result["host"])
                if why is not None:
                    raise EgressRefused(
                        f"{host} does not resolve to a public internet address",
                        detail=f"{host} resolves to {result['host']}, {why}",
                    )
        return answer

    async def close(self) -> None:
        """Close the inner resolver."""
        await self._inner.close()


def _guarded_socket(policy: EgressPolicy, addr_info: AddrInfoType) -> socket.socket:
    family, kind, proto, _, address = addr_info
    why = None if policy.allow_private_addresses else address_refusal(str(address[0]))
    if why is not None:
        raise EgressRefused(f"{address[0]} is {why}; a source must be on the public internet")
    return socket.socket(family=family, type=kind, proto=proto)


def guarded_connector(resolver: GuardedResolver) -> aiohttp.TCPConnector:
    """A connector that resolves names through ``resolver`` (the caller closes it) and checks
    the address of each socket before connecting it. Call it inside the event loop."""
    return aiohttp.TCPConnector(
        resolver=resolver,
        use_dns_cache=False,
        socket_factory=partial(_guarded_socket, resolver.policy),
    )


class GuardedSession(Closing):
    """An aiohttp session for source fetches that only reaches what ``policy`` allows.

    ``async with GuardedSession(policy) as http: async with http.get(url) as resp: ...``.
    ``headers`` go with every request; those named in ``secret_headers`` (and Authorization,
    Proxy-Authorization, Cookie) are dropped once a redirect leaves the URL's origin.
    ``resolver`` replaces the system resolver inside the guard (tests inject one).
    """

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        timeout: aiohttp.ClientTimeout | None = None,
        headers: Mapping[str, str] | None = None,
        secret_headers: Iterable[str] = (),
        resolver: AbstractResolver | None = None,
    ) -> None:
        self.policy = policy
        self._timeout = timeout or aiohttp.ClientTimeout(total=10)
        self._headers = dict(headers or {})
        self._secret = SECRET_HEADERS | {h.lower() for h in secret_headers}
        self._inner = resolver
        self._resolver: GuardedResolver | None = None
        self._session: aiohttp.ClientSession | None = None

    async def aopen(self) -> None:
        """Open the session."""
        if self._session is not None:
            raise RuntimeError("GuardedSession is already open")
        self._resolver = GuardedResolver(self.policy, self._inner)
        self._session = aiohttp.ClientSession(
            connector=guarded_connector(self._resolver),
            timeout=self._timeout,
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,
        )

    async def aclose(self) -> None:
        """Close the session (and its resolver)."""
        session, self._session = self._session, None
        resolver, self._resolver = self._resolver, None
        if session is not None:
            await session.close()
        if resolver is not None:
            await resolver.close()

    @asynccontextmanager
    async def get(
        self, url: str | URL, *, headers: Mapping[str, str] | None = None
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        """GET ``url``, following allowed redirects; the final response, released afterwards.

        Raises :class:`EgressRefused` before connecting anywhere the policy does not allow,
        and when a response redirects more than ``max_redirects`` times.
        """
        if self._session is None:
            raise RuntimeError("GuardedSession.get() outside 'async with'")
        target = check_url(url, self.policy)
        sent = {**self._headers, **(headers or {})}
        hops = 0
        while True:
            resp = await self._session.get(target, headers=sent, allow_redirects=False)
            location = resp.headers.get("Location")
            if resp.status not in REDIRECT_STATUSES or location is None:
                break
            resp.release()
            if hops == self.policy.max_redirects:
                raise EgressRefused(
                    f"the source redirected more than {self.policy.max_redirects} times"
                )
            hops += 1
            following = self._follow(target, location)
            if following.origin() != target.origin():
                sent = {k: v for k, v in sent.items() if k.lower() not in self._secret}
            target = following
        try:
            yield resp
        finally:
            resp.release()

    async def post(
        self, url: str | URL, body: bytes, *, headers: Mapping[str, str] | None = None
    ) -> aiohttp.ClientResponse:
        """POST ``body`` to ``url`` once, following no redirect (a 3xx is the caller's to
        judge); the response, to be released by the caller. :class:`EgressRefused` before
        connecting anywhere the policy does not allow."""
        if self._session is None:
            raise RuntimeError("GuardedSession.post() outside 'async with'")
        target = check_url(url, self.policy)
        sent = {**self._headers, **(headers or {})}
        return await self._session.post(target, data=body, headers=sent, allow_redirects=False)

    def _follow(self, current: URL, location: str) -> URL:
        try:
            following = URL(location)
            if not following.absolute:
                following = current.join(following)
            return check_url(following, self.policy)
        except (ValueError, UnicodeError):
            raise EgressRefused("the source redirected to an invalid address") from None
        except EgressRefused as exc:
            raise EgressRefused(f"the source redirected elsewhere: {exc}") from None
