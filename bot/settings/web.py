"""``[web]``: the public scoreboard pages (:mod:`bot.web`), on a listener of their own.

The pages have their own host and port, apart from the ops server, so that nothing of the ops
endpoints (metrics, readiness, push) is reachable where the public is let in.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field
from yarl import URL

from bot.settings.values import Flag, Host, HttpUrl, Port, Table, at_least, bad, describe


def _public_url(value: str) -> str:
    url = URL(value)
    if url.query_string or url.fragment:
        raise bad(f"must be a plain address with no ?query or #fragment, got {describe(value)}")
    return value.rstrip("/")


def _origin(value: str) -> str:
    url = URL(value) if value.startswith(("http://", "https://")) else None
    if url is None or not url.host or url.path not in ("", "/") or url.query_string:
        raise bad(f"expected an origin like 'https://news.example', got {describe(value)}")
    if url.user or url.password or url.fragment:
        raise bad(f"expected an origin like 'https://news.example', got {describe(value)}")
    return str(url.origin())


PublicUrl = Annotated[HttpUrl, AfterValidator(_public_url)]
Origin = Annotated[HttpUrl, AfterValidator(_origin)]


class WebConfig(Table):
    """``[web]``: where the public pages listen, the address the public reaches them at, and
    who may frame the embeddable variant."""

    host: Host = "127.0.0.1"
    port: Port = 8081
    public_url: PublicUrl | None = Field(default=None, examples=['"https://count.example.org"'])
    """The address the public reaches the pages at (behind a proxy, say); the link in
    ``status`` replies and final messages, and the base of the card image's URL. Without it
    the pages still serve, and chat carries no link."""
    embed_origins: tuple[Origin, ...] = ()
    """The origins whose pages may frame ``?embed=1`` (CSP ``frame-ancestors``); none: nobody."""
    streams_per_ip: Annotated[int, at_least(1)] = 16
    """The most live-update streams one address may hold open at once; more are answered 429."""
    max_streams: Annotated[int, at_least(1)] = 20_000
    """The most live-update streams open at once, all addresses together."""
    stream_minutes: Annotated[int, at_least(1)] = 30
    """A stream is closed after this long; the page reconnects at once and misses nothing."""
    forwarded_for: Flag = False
    """Behind your own proxy: count streams per address by the last address the proxy added to
    ``X-Forwarded-For`` (otherwise every viewer would be the proxy). Never without a proxy that
    sets it: anyone could then claim any address."""
