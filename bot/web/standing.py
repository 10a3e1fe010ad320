"""A count's standing as one JSON document: ``GET /c/<id>.json``, and the body a webhook sends.

Built from a :class:`~bot.domain.message.Message`, the platform-neutral message every surface
renders, so that a plug-in posting an update (which has its message from the outbox) sends the
very document the page serves. The schema (``version`` 1; a field is only ever added, and a
change that would break a reader bumps ``version``):

=================  ======================================================================
``version``        ``1``
``count_id``       the count's id (its address: ``/c/<count_id>``)
``title``          the count's title
``url``            the count's public page, or ``null`` where there is none to give
``seq``            the update's number (``0``: no figures yet)
``state``          ``scheduled``, ``counting``, ``paused`` or ``final``
``state_text``     the state as the page says it (``Count paused``)
``headline``       the headline the update was published with (never worded again)
``figures``        one object per choice, in the count's order: ``choice`` (its id),
                   ``label``, ``votes`` (an integer), ``votes_text`` (``1,100``), ``share``
                   (0 to 1), ``share_text`` (``70.4%``, ``-`` before any valid vote),
                   ``note`` (``needs 508 more to clinch``), ``leading``, ``winner``
``sentences``      the sentences under the figures (margin, what remains, turnout), in order,
                   then the notes (when a paused count resumes), their times in UTC
``footer``         provenance (final or unofficial, the source, as of when, the update), its
                   time in UTC
``leader``         the leading choice's id, or ``null``
``winner``         the winning choice's id once decided, or ``null``
``updated``        when the figures were observed, RFC 3339 in UTC, or ``null``
=================  ======================================================================

Every text is plain text, as the chat's (control characters and bidi overrides removed): a
reader that shows one in markup must escape it.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from bot.domain.message import ChoiceLine, Message, fixed, utc_time
from bot.domain.safe_text import clean

VERSION = 1
CONTENT_TYPE = "application/json"
SURROGATE = re.compile("[\ud800-\udfff]")


def rfc3339(at: datetime) -> str:
    """``2021-04-08T18:00:00Z``: a time in UTC as RFC 3339 (Atom's and the document's)."""
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def figure(c: ChoiceLine) -> dict[str, Any]:
    return {
        "choice": c.choice_id,
        "label": clean(c.label),
        "votes": c.votes,
        "votes_text": c.votes_text,
        "share": c.share,
        "share_text": c.share_text,
        "note": clean(c.note),
        "leading": c.leading,
        "winner": c.winner,
    }


def document(
    message: Message, *, state: str, state_text: str, updated: datetime, url: str | None
) -> dict[str, Any]:
    """The standing after ``message``'s update (its headline as it was published)."""
    return {
        "version": VERSION,
        "count_id": message.count_id,
        "title": clean(message.title),
        "url": url,
        "seq": message.seq,
        "state": state,
        "state_text": state_text,
        "headline": clean(message.headline),
        "figures": [figure(c) for c in message.choices],
        "sentences": [clean(line) for line in message.lines]
        + [clean(note.show(str, fixed(utc_time))) for note in message.notes],
        "footer": clean(message.footer.show(str, utc_time)),
        "leader": message.leader,
        "winner": message.winner,
        "updated": rfc3339(updated),
    }


def before_figures(
    count_id: str, title: str, *, state: str, state_text: str, headline: str, url: str | None
) -> dict[str, Any]:
    """The standing of a count with no figures yet (``seq`` 0)."""
    return {
        "version": VERSION,
        "count_id": count_id,
        "title": clean(title),
        "url": url,
        "seq": 0,
        "state": state,
        "state_text": state_text,
        "headline": headline,
        "figures": [],
        "sentences": [],
        "footer": "",
        "leader": None,
        "winner": None,
        "updated": None,
    }


def encode(doc: dict[str, Any]) -> bytes:
    """The document as UTF-8 JSON, keys in the schema's order, ending with a newline (a lone
    surrogate, which UTF-8 cannot hold, as U+FFFD)."""
    text = json.dumps(doc, ensure_ascii=False, indent=1)
    return SURROGATE.sub("\ufffd", text).encode() + b"\n"
