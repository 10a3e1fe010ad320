"""A count's Atom feed (RFC 4287): ``GET /c/<id>/feed.atom``, one entry per significant update.

The feed's ``id`` and each entry's are ``urn:uuid:`` URIs (RFC 4122 name-based, SHA-1) made
from the page's address and the update's number: the same on every instance and after a
restart, for as long as ``[web] public_url`` stays. Titles and contents are ``type="text"``:
what the chat said, as text, never markup; the XML is written by :mod:`xml.etree`, which
escapes every ``&``, ``<`` and ``>``, and every text has been through
:func:`bot.domain.safe_text.clean` (no control characters, which XML 1.0 cannot hold; nor
:data:`NOT_XML`).
"""

from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.domain.safe_text import clean
from bot.web.standing import rfc3339

ATOM = "http://www.w3.org/2005/Atom"
CONTENT_TYPE = "application/atom+xml"
AUTHOR = "tallybot"
NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")
"""What XML 1.0 cannot hold beyond the control characters ``clean`` removes: a lone surrogate
(a chat's JSON can carry one), U+FFFE and U+FFFF."""


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One significant update."""

    seq: int
    headline: str
    """As published."""
    content: str
    """The update's figures and sentences, as plain text."""
    updated: datetime


def entry_id(page_url: str, seq: int) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"{page_url}#update-{seq}").urn


def feed_id(page_url: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, page_url).urn


def _text(parent: ET.Element, tag: str, text: str, *, typed: bool = False) -> None:
    element = ET.SubElement(parent, tag, {"type": "text"} if typed else {})
    element.text = NOT_XML.sub("\ufffd", clean(text))


def _link(parent: ET.Element, rel: str, href: str, content_type: str) -> None:
    ET.SubElement(parent, "link", {"rel": rel, "type": content_type, "href": href})


def render(
    *,
    title: str,
    subtitle: str,
    page_url: str,
    updated: datetime,
    entries: Sequence[FeedEntry],
) -> bytes:
    """The feed (UTF-8 XML) of the count at ``page_url``; ``entries`` newest first;
    ``updated``: its latest update's time (or, before any, when the count was last read)."""
    feed = ET.Element("feed", {"xmlns": ATOM})
    _text(feed, "id", feed_id(page_url))
    _text(feed, "title", title, typed=True)
    _text(feed, "subtitle", subtitle, typed=True)
    _text(feed, "updated", rfc3339(updated))
    author = ET.SubElement(feed, "author")
    _text(author, "name", AUTHOR)
    _link(feed, "alternate", page_url, "text/html")
    _link(feed, "self", f"{page_url}/feed.atom", CONTENT_TYPE)
    for e in entries:
        item = ET.SubElement(feed, "entry")
        _text(item, "id", entry_id(page_url, e.seq))
        _text(item, "title", e.headline, typed=True)
        _text(item, "updated", rfc3339(e.updated))
        _link(item, "alternate", page_url, "text/html")
        _text(item, "content", e.content, typed=True)
    body: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return body + b"\n"
