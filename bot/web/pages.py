"""The page's markup and files: Jinja2 templates (autoescaped), the static script and style, and
the headers every answer carries (a strict Content-Security-Policy, no cookies, no framing
except ``?embed=1`` by the operator's listed origins)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

STATIC_TYPES = {
    "page.js": "text/javascript; charset=utf-8",
    "page.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
}

_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'"
)
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
"""An SVG opened by itself: matplotlib's own ``<style>``, nothing else."""
NOT_FOUND_POLICY = "default-src 'none'; frame-ancestors 'none'"
NOT_FOUND = (
    '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    "<title>Not found</title></head><body><main><h1>Not found</h1>"
    "<p>There is no public count at this address.</p></main></body></html>\n"
)
"""The one answer for a count that does not exist, is not public, or any other unknown path."""

COMMON_HEADERS: Mapping[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def page_policy(frame_ancestors: Sequence[str]) -> str:
    """The page's CSP: scripts, styles, images and connections from this server only; framed
    only by ``frame_ancestors`` (none: by nobody)."""
    ancestors = " ".join(frame_ancestors) if frame_ancestors else "'none'"
    return f"{_POLICY}; frame-ancestors {ancestors}"


@dataclass(frozen=True, slots=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


def _assets() -> dict[str, Asset]:
    folder = resources.files("bot.web") / "static"
    out: dict[str, Asset] = {}
    for name, content_type in STATIC_TYPES.items():
        body = (folder / name).read_bytes()
        out[name] = Asset(body, content_type, hashlib.sha256(body).hexdigest()[:16])
    return out


class Pages:
    """The templates and static files, read once."""

    def __init__(self) -> None:
        self.env = Environment(
            loader=PackageLoader("bot.web", "templates"),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=False,
            keep_trailing_newline=True,
        )
        self.assets = _assets()
        self.env.globals["static_url"] = self.static_url

    def static_url(self, name: str) -> str:
        """The address of a static file, its content's hash in the query (cached for long)."""
        return f"/static/{name}?v={self.assets[name].etag}"

    def render(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)
