"""What ``tallybot push`` sends: a signed tally to a running bot's push endpoint.

For scripts and spreadsheets, the exit code says what happened:

==  ============================================================================
0   accepted, or no change (the figures are the ones already shown)
1   rejected by the detector (409): e.g. a decrease not sent as a correction
2   a usage or configuration problem here (bad figures, the secret not set)
3   refused by the server (400, 401, 404, 413, 422): the line printed says why
4   no answer: the server is unreachable, timed out, or failed (5xx)
==  ============================================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

import aiohttp

from bot.commands.args import NUMBER
from bot.domain.model import CEILING_RULE, figure_value
from bot.domain.safe_text import clean
from bot.errors import ConfigError, PushError
from bot.ops import signing

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_UNAVAILABLE = 4
TOP_LEVEL = ("void", "challenged", "sustained", "received")
"""Figures that are not votes for a choice."""


@dataclass(frozen=True, slots=True)
class PushAnswer:
    """The server's answer: its status and JSON body."""

    status: int
    body: dict[str, object] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        if 200 <= self.status < 300:
            return EXIT_OK
        if self.status == 409:
            return EXIT_REJECTED
        if 400 <= self.status < 500:
            return EXIT_REFUSED
        return EXIT_UNAVAILABLE

    def line(self) -> str:
        """One line for a person: what became of the tally (as the server said it, without
        control characters: it goes to a terminal)."""
        return clean(self._words())

    def _words(self) -> str:
        b = self.body
        result = b.get("result")
        if self.status in (200, 201) and result == "accepted":
            return f"accepted #{b.get('seq')} for {b.get('count')}: {b.get('headline')}"
        if self.status == 200 and result == "no_change":
            return f"no change: {b.get('count')} already shows those figures (#{b.get('seq')})"
        if result == "rejected":
            return f"rejected ({b.get('reason')}): {b.get('error')}"
        return f"error {self.status}: {b.get('error', 'no explanation given')}"


def figures_body(
    words: Sequence[str],
    *,
    state: str | None = None,
    correction: bool = False,
    schedule: Mapping[str, object] | None = None,
) -> bytes:
    """A push body from ``name=value`` words: ``void``, ``challenged``, ``sustained`` and
    ``received`` are figures of their own, any other name a choice. ``1,100`` is read as 1100.
    ``schedule``: ``starts`` or ``resumes`` and ``remind_before``, as the server reads them."""
    votes: dict[str, int] = {}
    doc: dict[str, object] = {"votes": votes}
    for word in words:
        name, sep, value = word.partition("=")
        if not sep or not name or not NUMBER.match(value):
            raise ConfigError(f"{word!r}: figures look like yes=463 or no=1,100")
        figure = figure_value(value.replace(",", ""))
        if figure is None:
            raise ConfigError(f"{name} is too large: {CEILING_RULE}")
        if name in votes or (name in TOP_LEVEL and name in doc):
            raise ConfigError(f"{name!r} is given twice")
        if name in TOP_LEVEL:
            doc[name] = figure
        else:
            votes[name] = figure
    if not votes:
        raise ConfigError("no votes given: name each choice, e.g. yes=463 no=1100")
    if state is not None:
        doc["state"] = state
    if correction:
        doc["correction"] = True
    doc.update(schedule or {})
    return json.dumps(doc).encode()


def endpoint(url: str, count_id: str) -> str:
    """The push URL of ``count_id`` on the server at ``url`` (``http://host:port``)."""
    return f"{url.rstrip('/')}/api/counts/{quote(count_id, safe='')}/tally"


async def push(
    url: str, count_id: str, body: bytes, secret: str, *, now: float, within: float = 10.0
) -> PushAnswer:
    """Sign ``body`` at Unix time ``now`` and POST it; PushError when there is no answer."""
    target = endpoint(url, count_id)
    signed = signing.headers(secret, now, body, path=urlsplit(target).path)
    headers = {"Content-Type": "application/json", **signed}
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=within)) as session,
            session.post(target, data=body, headers=headers) as resp,
        ):
            status = resp.status
            text = await resp.text(errors="replace")
    except TimeoutError as exc:
        raise PushError(f"POST {target}: no answer within {within:g} s") from exc
    except (aiohttp.ClientError, ValueError) as exc:
        raise PushError(f"POST {target}: {type(exc).__name__}: {exc}") from exc
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        parsed = {"error": text.strip()[:200] or "(empty body)"}
    return PushAnswer(status, parsed)
