"""A pushed tally: the JSON body of ``POST /api/counts/{id}/tally`` read into a ``Tally``.

    {"votes": {"yes": 463, "no": 1100}, "void": 0, "challenged": 505, "received": 3215,
     "state": "counting", "correction": false}

``votes`` needs a figure for every choice of the count and nothing else; ``void``,
``challenged`` and ``sustained`` (challenged ballots whose challenge was upheld) default to 0,
``received`` to unknown, ``state`` to ``counting`` (or ``paused``, ``final``), ``correction``
to false (true lets figures go down or change a final count); ``starts`` or ``resumes`` (an ISO
8601 time with its offset, ``"2021-04-09T09:00-05:00"``, or zone, ``"...[America/Chicago]"``)
and ``remind_before`` (minutes) schedule the count (:func:`read_schedule`). The figures are
read by the same mapping as a polled JSON feed (:mod:`bot.ingest.sources.mapping`), so the
rules are the same: non-negative whole numbers (or strings of digits). Whatever is wrong is a
:class:`RequestError` with status 400 (not JSON) or 422 (not a valid tally) naming the field.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from bot.base.clock import Clock
from bot.domain.model import Count, Tally, TallyState
from bot.domain.schedule import Schedule, ScheduleError, When, parse_when
from bot.errors import PermanentSourceError, RequestError
from bot.ingest.sources.json_doc import parse_json, tally_from_json
from bot.ingest.sources.mapping import FieldMap, StateValues

FIELDS = (
    "votes",
    "void",
    "challenged",
    "sustained",
    "received",
    "state",
    "correction",
    "starts",
    "resumes",
    "remind_before",
)
SCHEDULE_FIELDS = ("starts", "resumes", "remind_before")
"""Optional: when the count starts or resumes (``bot.domain.schedule``), with its offset or
zone, and the reminder's lead in minutes; put in the store before the tally is taken in, so
that the pause it brings says when the count resumes."""
SOURCE = "push"
"""What a pushed tally's ``source`` is (it goes into the message footer)."""


def push_fields(count: Count) -> FieldMap:
    """Where each figure is in a push body: ``votes.<choice>``, ``void``, ``challenged``, ..."""
    return FieldMap(
        votes={c: f"votes.{c}" for c in count.choice_ids},
        void="void",
        challenged="challenged",
        received="received",
        state="state",
        sustained="sustained",
    )


def read_push(body: bytes, count: Count, *, clock: Clock) -> Tally:
    """The tally in a push ``body`` for ``count``; RequestError (400, 422) saying what is wrong."""
    try:
        doc = parse_json(body, "request")
    except PermanentSourceError as exc:
        raise RequestError(str(exc), status=400) from None
    if not isinstance(doc, dict):
        raise _invalid(f"the body must be a JSON object like {example(count)}")
    unknown = [k for k in doc if k not in FIELDS]
    if unknown:
        raise _invalid(f"unknown field {_shown(unknown[0])}; fields are {', '.join(FIELDS)}")
    votes = doc.get("votes")
    if not isinstance(votes, dict):
        raise _invalid(f'"votes" must be an object like {example(count)}')
    names = ", ".join(count.choice_ids)
    strange = [c for c in votes if c not in count.choice_ids]
    if strange:
        raise _invalid(f"unknown choice {_shown(strange[0])} for {count.id}; choices are {names}")
    missing = [c for c in count.choice_ids if c not in votes]
    if missing:
        raise _invalid(f"no figure for choice {missing[0]!r} in votes (choices are {names})")
    for key in ("void", "challenged", "sustained", "received", "state"):
        if key in doc and doc[key] is None:
            del doc[key]  # JSON null: not given (the mapping would call the path missing)
    state = doc.get("state")
    if state is not None and (
        not isinstance(state, str) or state not in {s.value for s in TallyState}
    ):
        states = ", ".join(s.value for s in TallyState)
        raise _invalid(f'"state" must be one of {states}, got {_shown(state)}')
    correction = doc.get("correction", False)
    if not isinstance(correction, bool):
        raise _invalid(f'"correction" must be true or false, got {_shown(correction)}')
    fields = push_fields(count)
    fields = replace(
        fields,
        void=fields.void if "void" in doc else None,
        challenged=fields.challenged if "challenged" in doc else None,
        received=fields.received if "received" in doc else None,
        state=fields.state if "state" in doc else None,
        sustained=fields.sustained if "sustained" in doc else None,
    )
    try:
        tally = tally_from_json(
            doc, count, fields, StateValues(), clock=clock, source=SOURCE, label="the body"
        )
    except PermanentSourceError as exc:
        raise _invalid(str(exc)) from None
    return replace(tally, correction=correction)


def example(count: Count) -> str:
    """A minimal body for ``count``, for error messages."""
    votes = ", ".join(f'"{c}": 0' for c in count.choice_ids)
    return f'{{"votes": {{{votes}}}}}'


def _shown(value: object) -> str:
    """``repr(value)``, cut short: error messages echo what was sent, not all of it."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:56]}...{text[-1]}"


def _invalid(problem: str) -> RequestError:
    return RequestError(f"invalid tally: {problem}", status=422)


def read_schedule(body: bytes, count: Count, now: datetime) -> Schedule | None:
    """The schedule a push ``body`` (already read by :func:`read_push`) gives ``count``, if
    any; RequestError (422) saying what is wrong: a time in the past, an offset or zone that
    does not exist, no offset or zone, both ``starts`` and ``resumes``, a final."""
    doc = parse_json(body, "request")
    assert isinstance(doc, dict)  # read_push checked it
    given = [k for k in ("starts", "resumes") if doc.get(k) is not None]
    lead = doc.get("remind_before")
    if not given:
        if lead is not None:
            raise _invalid('"remind_before" goes with "starts" or "resumes"')
        return None
    if len(given) > 1:
        raise _invalid('give "starts" or "resumes", not both')
    if doc.get("state") == TallyState.FINAL.value:
        raise _invalid(f"a final count is not scheduled (drop {given[0]!r})")
    text = doc[given[0]]
    if not isinstance(text, str):
        raise _invalid(f'"{given[0]}" must be a time like "2021-04-09T09:00-05:00"')
    minutes = None
    if lead is not None:
        if isinstance(lead, bool) or not isinstance(lead, int) or not 1 <= lead <= 1440:
            raise _invalid(f'"remind_before" must be whole minutes from 1 to 1440, got {lead!r}')
        minutes = timedelta(minutes=lead)
    try:
        at = parse_when(text, None, now)
    except ScheduleError as exc:
        raise _invalid(f"{given[0]}: {exc}") from None
    return Schedule(count.id, When(given[0]), at, minutes)
