"""What a public page shows, from the same formatter as the chat messages.

The figures, the headline, the sentences under them and the footer are the ``status`` message of
:func:`bot.domain.format.for_status`, word for word; the history lists each accepted update with
its time and the headline its message was published with (kept by the store, never worded
again: an edit of the count's rule since does not rewrite what was said). This module only
arranges them: the template (``templates/page.html``) and the script (``static/page.js``) show
them as text, never as markup. Times stay values (:class:`Segment`) so the page can mark them
up as ``<time>`` and show them in each reader's own zone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC

from bot.domain import format as fmt
from bot.domain.detect import Accepted, detect
from bot.domain.message import Message, Moment, Part, Timed
from bot.domain.model import Count, CountStatus, Tally, TallyState
from bot.domain.safe_text import clean
from bot.domain.times import clock_time
from bot.ingest.push_body import SOURCE as PUSHED
from bot.ingest.sources.health import SourceHealth

HISTORY = 50
"""The most updates a page lists (the latest)."""

STATE_WORDS = {
    CountStatus.SCHEDULED: "Not started",
    CountStatus.COUNTING: "Counting",
    CountStatus.PAUSED: "Count paused",
    CountStatus.FINAL: "Final",
}
STATE_OF_TALLY = {
    TallyState.COUNTING: CountStatus.COUNTING,
    TallyState.PAUSED: CountStatus.PAUSED,
    TallyState.FINAL: CountStatus.FINAL,
}

Health = Callable[[str], SourceHealth | None]
"""A count's source health by count id (None: not polled: typed in or pushed)."""


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of worded text, with the time that follows it (if any) as a value."""

    text: str
    iso: str = ""
    """The time, ISO 8601 in UTC, for ``<time datetime>``; empty: no time."""
    when: str = ""
    """The time as the page shows it without a script (``8 Apr 2021 18:00 UTC``)."""


def segments(text: Timed) -> tuple[Segment, ...]:
    """``text`` cut into segments, each text with the time after it."""
    out: list[Segment] = []
    pending = ""
    for part in text.parts:
        if isinstance(part, str):
            pending += clean(part)
        elif part.relative and part.words:  # "in 10 hours", as worded (no script needed)
            pending += clean(part.lead + part.words)
        else:
            out.append(_timed(pending + clean(part.lead), part))
            pending = ""
    if pending:
        out.append(Segment(pending))
    return tuple(out)


def _timed(text: str, moment: Moment) -> Segment:
    at = moment.at.astimezone(UTC)
    return Segment(text, at.isoformat().replace("+00:00", "Z"), clock_time(at, UTC))


@dataclass(frozen=True, slots=True)
class Row:
    """One choice's line of the figures table."""

    label: str
    votes: str
    share: str
    note: str
    leading: bool
    winner: bool
    position: int


@dataclass(frozen=True, slots=True)
class Entry:
    """One accepted update in the history."""

    seq: int
    at: Segment
    headline: str
    state: str


@dataclass(frozen=True, slots=True)
class View:
    """Everything the page shows of a count after one update (``seq`` 0: no figures yet)."""

    count_id: str
    title: str
    seq: int
    state: str
    """``counting``, ``paused``, ``final`` or ``scheduled``."""
    state_text: str
    headline: str
    rows: tuple[Row, ...]
    lines: tuple[str, ...]
    footer: tuple[Segment, ...]
    freshness: tuple[Segment, ...]
    entry: Entry | None
    chart: str
    """The chart's address (SVG), or empty without figures."""
    chart_narrow: str
    """The narrow chart's address (SVG, for a phone), or empty without figures."""
    description: str
    """The chart in words (its alt text)."""

    def to_json(self) -> str:
        """The view as one line of JSON (the data of an event)."""
        return json.dumps(asdict(self), separators=(",", ":"), ensure_ascii=False)


def entry(count: Count, tally: Tally, previous: Tally | None) -> Entry:
    """An update in the history, with the headline its chat message was published with; for
    one kept before headlines were (``tally.headline`` empty), the headline it would have had
    (what changed from ``previous``: "Lead change: ...", "Count paused: ...")."""
    at = Timed.of(Moment(tally.observed_at))
    (when,) = segments(at)
    if tally.headline:
        return Entry(tally.seq, when, clean(tally.headline), tally.state.value)
    d = detect(count, previous, tally)
    if isinstance(d, Accepted):
        message = fmt.for_update(count, d, previous.seq if previous else None)
    else:  # the count's rules changed since: say where it stood
        message = fmt.for_status(count, tally)
    return Entry(tally.seq, when, clean(message.headline), tally.state.value)


def source_words(source: str) -> str:
    """Where figures came from, in words a reader knows: a push is "sent in by the count's
    organisers", a figure typed in chat "typed in by" its admin, a feed is named."""
    if source == PUSHED:
        return "sent in by the count's organisers"
    if source.startswith("admin "):
        return f"typed in by {source.removeprefix('admin ')}"
    return f"from {source}"


def _footer(message: Message, last: Tally) -> Timed:
    """The message's footer, with where the figures came from in words (:func:`source_words`)."""
    said = f" · source: {last.source}"
    parts = [
        p.replace(said, f" · figures {source_words(last.source)}", 1) if isinstance(p, str) else p
        for p in message.footer.parts
    ]
    return Timed(tuple(parts))


def _lines(message: Message) -> tuple[str, ...]:
    """The message's sentences, as plain text."""
    return tuple(clean(line) for line in message.lines)


def freshness(count: Count, last: Tally | None, health: SourceHealth | None) -> Timed:
    """How fresh the figures are: when the source was last checked and last changed (polled
    sources), or when the figures came in (typed or pushed). A stale source's error is not
    shown: it may name addresses inside the operator's network. Nothing before any figure (the
    headline says so)."""
    if health is None or health.last_checked is None:
        if last is None:
            return Timed.of("")
        return Timed.of(
            Moment(last.observed_at, lead=f"Figures {source_words(last.source)}, received "),
            ".",
        )
    parts: list[Part] = [Moment(health.last_checked, lead="Source last checked ")]
    if health.last_changed is not None:
        parts.append(Moment(health.last_changed, lead="; last changed "))
    if health.is_stale:
        parts.append("; the source is not answering: these figures may be out of date")
    return Timed.of(*parts, ".")


def view(
    count: Count,
    history: Sequence[Tally],
    health: SourceHealth | None,
    *,
    chart_url: Callable[[int], str],
    narrow_url: Callable[[int], str],
) -> View:
    """The page's view of ``count`` with its accepted ``history`` (oldest first) so far."""
    last = history[-1] if history else None
    fresh = segments(freshness(count, last, health))
    if last is None:
        status = count.status
        return View(
            count.id,
            clean(count.title),
            0,
            status.value,
            STATE_WORDS[status],
            "No figures yet.",
            (),
            (),
            (),
            fresh,
            None,
            "",
            "",
            "",
        )
    message: Message = fmt.for_status(count, last)
    status = STATE_OF_TALLY[last.state]
    return View(
        count.id,
        clean(count.title),
        last.seq,
        status.value,
        STATE_WORDS[status],
        clean(message.headline),
        tuple(
            Row(
                clean(c.label),
                c.votes_text,
                c.share_text,
                clean(c.note),
                c.leading,
                c.winner,
                c.position,
            )
            for c in message.choices
        ),
        _lines(message),
        segments(_footer(message, last)),
        fresh,
        entry(count, last, history[-2] if len(history) > 1 else None),
        chart_url(last.seq),
        narrow_url(last.seq),
        clean(fmt.chart_description(count, history)),
    )
