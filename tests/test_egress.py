"""The egress guard (bot/base/egress.py) at connect and on redirects, against real aiohttp servers
on loopback (port 0); the URL checks before any I/O are in tests/test_egress_urls.py.

No test reaches the internet: "public" names are answered by an injected resolver and only
resolved, never connected to; every connection that does happen goes to 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from bot.base.egress import (
    EgressPolicy,
    EgressRefused,
    GuardedResolver,
    GuardedSession,
    check_url,
    guarded_connector,
)
from bot.domain.subscription import Platform
from bot.runtime.app import App
from bot.testing.adapter import RecordingAdapter
from bot.testing.clock import FakeClock
from tests.ops.conftest import no_sleep, ops_config

CHAT = EgressPolicy()
OPERATOR = EgressPolicy(allow_private_addresses=True)


@dataclass
class Feed:
    """A loopback server: /feed answers JSON; /to?url=U redirects to U; /hop/N redirects N
    times before /feed. It records each request's path and headers."""

    port: int = 0
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.headers)))
        if request.path == "/to":
            raise web.HTTPFound(request.query["url"])
        if request.path.startswith("/hop/"):
            left = int(request.path.removeprefix("/hop/"))
            raise web.HTTPFound(f"/hop/{left - 1}" if left > 1 else "/feed")
        return web.json_response({"yes": 84, "no": 201})

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]


@pytest.fixture
async def feed() -> AsyncIterator[Feed]:
    f = Feed()
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", f.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    f.port = int(runner.addresses[0][1])
    try:
        yield f
    finally:
        await runner.cleanup()


class MapResolver(AbstractResolver):
    """DNS as a table: each name has a list of answers, given out in turn (the last repeats)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        turns = self.answers[host]
        addresses = turns.pop(0) if len(turns) > 1 else turns[0]
        return [
            ResolveResult(
                hostname=host,
                host=a,
                port=port,
                family=socket.AF_INET6 if ":" in a else socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
            for a in addresses
        ]

    async def close(self) -> None:
        return None


async def fetch(policy: EgressPolicy, url: str, **kwargs: object) -> tuple[int, str]:
    async with GuardedSession(policy, **kwargs) as http, http.get(url) as resp:  # type: ignore[arg-type]
        return resp.status, await resp.text()


# --- the bot's own network -------------------------------------------------------------------


async def test_a_chat_url_to_a_loopback_feed_is_refused(feed: Feed) -> None:
    with pytest.raises(EgressRefused, match=r"^127\.0\.0\.1 is a loopback address"):
        await fetch(CHAT, f"http://127.0.0.1:{feed.port}/feed")
    assert feed.requests == []


async def test_the_operators_policy_reaches_the_same_feed(feed: Feed) -> None:
    assert await fetch(OPERATOR, f"http://127.0.0.1:{feed.port}/feed") == (
        200,
        '{"yes": 84, "no": 201}',
    )
    assert feed.paths() == ["/feed"]


async def test_the_bots_own_ops_server_is_out_of_reach(tmp_path: Path) -> None:
    config = ops_config("http://127.0.0.1:9/unused.json", tmp_path)
    app = App(
        config,
        {Platform("console"): lambda commands: RecordingAdapter()},
        clock=FakeClock(),
        sleep=no_sleep,
        poll=False,
    )
    async with app:
        assert app.server is not None
        port = app.server.port
        for url in (f"{app.server.url}/metrics", f"http://[::1]:{port}/healthz"):
            with pytest.raises(EgressRefused, match="loopback"):
                await fetch(CHAT, url)
        with pytest.raises(EgressRefused, match=r"^localhost does not resolve to a public"):
            await fetch(CHAT, f"http://localhost:{port}/healthz")
        assert (await fetch(OPERATOR, f"{app.server.url}/healthz"))[0] == 200


async def test_cloud_metadata_is_refused_before_connecting() -> None:
    url = "http://169.254.169.254/latest/meta-data/"
    with pytest.raises(EgressRefused, match=r"^169\.254\.169\.254 is a link-local address"):
        check_url(url, CHAT)
    dns = MapResolver({})
    with pytest.raises(EgressRefused, match="link-local"):
        await fetch(CHAT, url, resolver=dns)
    assert dns.asked == []
    with pytest.raises(EgressRefused, match=r"^\[fd00:ec2::254\] is a private address"):
        check_url("http://[fd00:ec2::254]/latest/meta-data/", CHAT)


@pytest.mark.parametrize(
    "answer", [["169.254.169.254"], ["fd00:ec2::254"], ["100.100.100.200"], ["10.0.0.7"]]
)
async def test_a_name_for_a_metadata_or_private_address_is_refused_at_connect(
    answer: list[str],
) -> None:
    dns = MapResolver({"metadata.google.internal": [answer]})
    with pytest.raises(EgressRefused) as caught:
        await fetch(CHAT, "http://metadata.google.internal/computeMetadata/v1/", resolver=dns)
    assert (
        str(caught.value)
        == "metadata.google.internal does not resolve to a public internet address"
    )
    assert answer[0] in caught.value.detail  # for the operator's log, not for chat
    assert dns.asked == ["metadata.google.internal"]


async def test_localhost_is_refused_at_connect(feed: Feed) -> None:
    with pytest.raises(EgressRefused) as caught:
        await fetch(CHAT, f"http://localhost:{feed.port}/feed")
    assert "loopback" in caught.value.detail
    assert feed.requests == []


async def test_dns_rebinding_between_check_and_connect_is_caught(feed: Feed) -> None:
    name = "rebind.example.org"
    dns = MapResolver({name: [["9.9.9.9"], ["127.0.0.1"]]})
    checked = await GuardedResolver(CHAT, dns).resolve(name, feed.port)  # a check "at create"
    assert [r["host"] for r in checked] == ["9.9.9.9"]
    with pytest.raises(EgressRefused, match="does not resolve to a public"):
        await fetch(CHAT, f"http://{name}:{feed.port}/feed", resolver=dns)
    assert dns.asked == [name, name]
    assert feed.requests == []


async def test_one_private_address_in_an_answer_refuses_the_name(feed: Feed) -> None:
    dns = MapResolver({"mixed.example.org": [["9.9.9.9", "127.0.0.1"]]})
    with pytest.raises(EgressRefused):
        await fetch(CHAT, f"http://mixed.example.org:{feed.port}/feed", resolver=dns)
    assert feed.requests == []


async def test_the_injected_resolvers_answer_is_what_is_connected_to(feed: Feed) -> None:
    dns = MapResolver({"feeds.example.org": [["127.0.0.1"]]})
    url = f"http://feeds.example.org:{feed.port}/feed"
    assert (await fetch(OPERATOR, url, resolver=dns))[0] == 200
    assert feed.requests[0][1]["Host"] == f"feeds.example.org:{feed.port}"


async def test_a_public_host_resolves_and_documentation_addresses_do_not() -> None:
    dns = MapResolver({"feeds.example.org": [["9.9.9.9", "2606:4700::1111"]]})
    guard = GuardedResolver(CHAT, dns)
    assert [r["host"] for r in await guard.resolve("feeds.example.org", 443)] == [
        "9.9.9.9",
        "2606:4700::1111",
    ]
    for documentation in ("203.0.113.5", "192.0.2.2", "198.51.100.1", "2001:db8::1"):
        dns.answers["docs.example.org"] = [[documentation]]
        with pytest.raises(EgressRefused) as caught:
            await guard.resolve("docs.example.org", 443)
        assert "documentation" in caught.value.detail


async def test_the_socket_guard_holds_without_check_url(feed: Feed) -> None:
    """A plain aiohttp session on the guarded connector: the IP literal skips the resolver,
    and the socket factory refuses it."""
    async with aiohttp.ClientSession(connector=guarded_connector(GuardedResolver(CHAT))) as http:
        with pytest.raises(EgressRefused, match="loopback"):
            await http.get(f"http://127.0.0.1:{feed.port}/feed")
    assert feed.requests == []


# --- redirects -------------------------------------------------------------------------------


def listed(*hosts: str, max_redirects: int = 5) -> EgressPolicy:
    """The operator's restricted config: private addresses allowed, but only these hosts."""
    return EgressPolicy(
        allowed_hosts=hosts, allow_private_addresses=True, max_redirects=max_redirects
    )


def loopback_dns(*names: str) -> MapResolver:
    return MapResolver({name: [["127.0.0.1"]] for name in names})


async def test_a_redirect_from_an_allowed_host_to_loopback_is_refused(feed: Feed) -> None:
    dns = loopback_dns("feeds.example.org")
    url = f"http://feeds.example.org:{feed.port}/to?url=http://127.0.0.1:{feed.port}/feed"
    with pytest.raises(EgressRefused) as caught:
        await fetch(listed("feeds.example.org"), url, resolver=dns)
    assert str(caught.value) == (
        "the source redirected elsewhere: "
        "127.0.0.1 is not one of the hosts this bot may fetch sources from"
    )
    assert feed.paths() == ["/to"]


async def test_a_redirect_within_the_allowed_hosts_is_followed(feed: Feed) -> None:
    dns = loopback_dns("feeds.example.org")
    url = f"http://feeds.example.org:{feed.port}/to?url=/feed"
    assert (await fetch(listed("feeds.example.org"), url, resolver=dns))[0] == 200
    assert feed.paths() == ["/to", "/feed"]


@pytest.mark.parametrize(
    "target",
    ["file:///etc/passwd", "gopher://feeds.example.org/", "ftp://feeds.example.org/x",
     "http://user:pw@feeds.example.org/feed", "http://169.254.169.254/latest/meta-data/"],
)  # fmt: skip
async def test_a_redirect_to_a_refused_url_is_refused(feed: Feed, target: str) -> None:
    dns = loopback_dns("feeds.example.org")
    url = f"http://feeds.example.org:{feed.port}/to?url={target}"
    with pytest.raises(EgressRefused, match=r"^the source redirected elsewhere: "):
        await fetch(listed("feeds.example.org"), url, resolver=dns)
    assert feed.paths() == ["/to"]


async def test_redirects_stop_at_max_redirects(feed: Feed) -> None:
    dns = loopback_dns("feeds.example.org")
    policy = listed("feeds.example.org", max_redirects=2)
    base = f"http://feeds.example.org:{feed.port}"
    assert (await fetch(policy, f"{base}/hop/2", resolver=dns))[0] == 200
    feed.requests.clear()
    with pytest.raises(EgressRefused, match=r"^the source redirected more than 2 times$"):
        await fetch(policy, f"{base}/hop/3", resolver=dns)
    assert feed.paths() == ["/hop/3", "/hop/2", "/hop/1"]
    no_redirects = listed("feeds.example.org", max_redirects=0)
    with pytest.raises(EgressRefused, match="more than 0 times"):
        await fetch(no_redirects, f"{base}/hop/1", resolver=dns)


async def test_secret_headers_stay_with_the_origin(feed: Feed) -> None:
    dns = loopback_dns("feeds.example.org", "mirror.example.org")
    policy = listed("feeds.example.org", "mirror.example.org")
    url = f"http://feeds.example.org:{feed.port}/to?url=http://mirror.example.org:{feed.port}/feed"
    secrets = {"Authorization": "Bearer tok-1", "X-Api-Key": "key-2", "Accept": "text/csv"}
    await fetch(policy, url, resolver=dns, headers=secrets, secret_headers=["x-api-key"])
    first, second = (headers for _, headers in feed.requests)
    assert first["Authorization"] == "Bearer tok-1"
    assert first["X-Api-Key"] == "key-2"
    assert "Authorization" not in second
    assert "X-Api-Key" not in second
    assert second["Accept"] == "text/csv"
