"""A count's ``source`` table, one model per ``kind``: checked with the rest of the file
(:mod:`bot.settings.loader`), before anything is opened or connected.

Every kind takes ``kind`` (required) and ``name`` (optional; goes into ``Tally.source``; the
default is the kind with a dash, e.g. ``"http-json"``). The other keys are the fields of each
model below (each source module's docstring has a full example):

``kind = "http_json"`` (:class:`HttpJsonSettings`, :mod:`bot.ingest.sources.http_json`)
    ``url`` (required), ``fields``, ``state_values``, ``timeout`` (10), ``max_bytes``
    (1048576), ``headers``, ``headers_from_env``.
``kind = "http_csv"`` (:class:`HttpCsvSettings`, :mod:`bot.ingest.sources.http_csv`)
    As http_json, plus ``layout`` (``"rows"`` (default) or ``"pairs"``).
``kind = "file"`` (:class:`FileSettings`, :mod:`bot.ingest.sources.file`)
    ``path`` (required; relative to the config's folder), ``format`` (``"json"`` or ``"csv"``;
    default from the extension), ``layout`` (CSV only), ``fields``, ``state_values``,
    ``max_bytes`` (1048576).
``kind = "manual"`` (:class:`ManualSettings`, :mod:`bot.ingest.sources.manual`)
    Nothing else.
``kind = "replay"`` (:class:`ReplaySettings`, :mod:`bot.ingest.sources.replay`)
    ``path`` (required; relative to the config's folder), ``speed`` (1).

``fields`` and ``state_values`` are described in :mod:`bot.ingest.sources.mapping`; ``timeout``,
``max_bytes``, ``headers`` and ``headers_from_env`` in :mod:`bot.ingest.sources.http`. What the
file cannot say (whether a file exists, whether a variable is set) is checked when the source
is built (:mod:`bot.ingest.sources.factory`), by ``check-config`` and ``run`` before anything
connects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, PlainValidator, model_validator

from bot.domain.limits import MAX_SOURCE_NAME, too_long
from bot.domain.model import Count, TallyState
from bot.errors import ConfigError
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.file import FileFormat
from bot.ingest.sources.http import DEFAULT_MAX_BYTES, DEFAULT_TIMEOUT, SECRET_HEADERS
from bot.ingest.sources.json_doc import check_path
from bot.ingest.sources.mapping import OPTIONAL_TARGETS, FieldMap, StateValues
from bot.settings.values import (
    ENV_NAME,
    Filled,
    HttpUrl,
    Loc,
    Positive,
    Table,
    at_least,
    bad,
    describe,
    enum_of,
    problems,
    suggest,
)

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_STATES = [s.value for s in TallyState]

Layout = Annotated[CsvLayout, enum_of(CsvLayout, "layout")]
Format = Annotated[FileFormat, enum_of(FileFormat, "format")]
MaxBytes = Annotated[int, at_least(1)]


def _state(value: object) -> TallyState:
    if not isinstance(value, str) or value not in _STATES:
        shown, close = describe(value), ""
        if isinstance(value, str):
            shown, close = repr(value), suggest(value, _STATES)
        raise bad(f"bad state value {shown}{close}; must be one of {', '.join(_STATES)}")
    return TallyState(value)


def _words(value: Mapping[str, TallyState]) -> Mapping[str, TallyState]:
    problems("state_values", [((w,), "the word is empty") for w in value if not w.strip()])
    try:
        StateValues({w: s.value for w, s in value.items()})
    except ConfigError as exc:
        raise bad(str(exc).removeprefix("state_values: ")) from None
    return value


StateWords = Annotated[
    Mapping[str, Annotated[TallyState, PlainValidator(_state)]], AfterValidator(_words)
]


def _headers(value: Mapping[str, str]) -> Mapping[str, str]:
    found: list[tuple[Loc, str]] = []
    for header, text in value.items():
        if header.casefold() in SECRET_HEADERS:
            found.append(
                (
                    (header,),
                    f"{header} is a secret and does not belong in the config; "
                    f'use headers_from_env = {{ {header} = "ENV_VAR_NAME" }}',
                )
            )
        elif not _HEADER_NAME.fullmatch(header):
            found.append(((header,), f"{header!r} is not a valid header name"))
        elif "\n" in text or "\r" in text:
            found.append(((header,), "header values cannot contain line breaks"))
    problems("headers", found)
    return value


def _from_env(value: Mapping[str, str]) -> Mapping[str, str]:
    found: list[tuple[Loc, str]] = []
    for header, var in value.items():
        if not _HEADER_NAME.fullmatch(header):
            found.append(((header,), f"{header!r} is not a valid header name"))
        elif not ENV_NAME.fullmatch(var):
            found.append(((header,), f"{var!r} is not an environment variable name"))
    problems("headers_from_env", found)
    return value


class Fields(Table):
    """``fields``: where each figure is in the document (see :class:`FieldMap`)."""

    votes: Mapping[str, Filled] = Field(default_factory=dict)
    """Choice id to locator; a choice not named is looked up under its own id."""
    void: Filled | None = None
    challenged: Filled | None = None
    received: Filled | None = None
    state: Filled | None = None
    sustained: Filled | None = None

    def field_map(self, count: Count) -> FieldMap:
        votes = {**FieldMap.default(count).votes, **self.votes}
        return FieldMap(
            votes, self.void, self.challenged, self.received, self.state, self.sustained
        )

    def targets(self) -> list[tuple[Loc, str]]:
        """Every locator given, and where it is: ``(("votes", "yes"), "results.0.count")``."""
        found: list[tuple[Loc, str]] = [(("votes", c), path) for c, path in self.votes.items()]
        others = (self.void, self.challenged, self.received, self.state, self.sustained)
        for name, path in zip(OPTIONAL_TARGETS, others, strict=True):
            if path is not None:
                found.append(((name,), path))
        return found


def _source_name(value: str) -> str:
    over = too_long("name", value, MAX_SOURCE_NAME)
    if over is not None:
        raise bad(over)
    return value


class _Source(Table):
    kind: str
    name: Annotated[Filled, AfterValidator(_source_name)] | None = None
    """At most ``MAX_SOURCE_NAME`` characters."""

    @property
    def label(self) -> str:
        """``name``, else the kind with a dash (``http-json``)."""
        return self.name or self.kind.replace("_", "-")


class MappedSettings(_Source):
    """A source that reads figures out of a document (``fields``, ``state_values``)."""

    fields: Fields = Fields()
    state_values: StateWords = Field(default_factory=dict)

    def states(self) -> StateValues:
        return StateValues({w: s.value for w, s in self.state_values.items()})

    def json_paths(self) -> bool:
        return True

    def unknown_choices(self, count: Count) -> list[tuple[Loc, str]]:
        """The vote locators of choices ``count`` does not have."""
        ids = ", ".join(map(repr, count.choice_ids))
        return [
            (
                ("fields", "votes"),
                f"unknown choice {choice!r}{suggest(choice, count.choice_ids)}; "
                f"count {count.id!r} has choices {ids}",
            )
            for choice in self.fields.votes
            if choice not in count.choice_ids
        ]

    @model_validator(mode="after")
    def _paths(self) -> MappedSettings:
        if self.json_paths():
            found = [(("fields", *loc), check_path(p)) for loc, p in self.fields.targets()]
            problems("source", [(loc, text) for loc, text in found if text is not None])
        return self


class HttpSettings(MappedSettings):
    url: HttpUrl = Field(examples=['url = "https://example.org/feed.json"'])
    timeout: Positive = DEFAULT_TIMEOUT
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES
    headers: Annotated[Mapping[str, Filled], AfterValidator(_headers)] = Field(default_factory=dict)
    """Sent with every request; never secrets (``headers_from_env``)."""
    headers_from_env: Annotated[Mapping[str, Filled], AfterValidator(_from_env)] = Field(
        default_factory=dict
    )
    """Header to the variable (or ``NAME_FILE``) its value is read from when the source is built."""

    @model_validator(mode="after")
    def _clash(self) -> HttpSettings:
        clash = {h.casefold() for h in self.headers} & {h.casefold() for h in self.headers_from_env}
        if clash:
            said = f"header {sorted(clash)[0]!r} is also set in headers"
            problems("source", [(("headers_from_env",), said)])
        return self


class HttpJsonSettings(HttpSettings):
    kind: Literal["http_json"] = "http_json"


class HttpCsvSettings(HttpSettings):
    kind: Literal["http_csv"] = "http_csv"
    layout: Layout = CsvLayout.ROWS

    def json_paths(self) -> bool:
        return False


def _file_path(value: str) -> str:
    if "\0" in value:
        raise bad("contains a NUL character")
    return value


FilePath = Annotated[Filled, AfterValidator(_file_path)]


class FileSettings(MappedSettings):
    kind: Literal["file"] = "file"
    path: FilePath = Field(examples=['path = "feeds/bessemer.json"'])
    format: Format | None = None
    layout: Layout | None = None
    max_bytes: MaxBytes = DEFAULT_MAX_BYTES

    @property
    def file_format(self) -> FileFormat:
        """``format``, else the one of the file's extension (checked when read)."""
        return self.format or FileFormat.from_suffix(Path(self.path)) or FileFormat.JSON

    def json_paths(self) -> bool:
        return self.file_format is FileFormat.JSON

    @model_validator(mode="after")
    def _format(self) -> FileSettings:
        if self.format is None and FileFormat.from_suffix(Path(self.path)) is None:
            problems(
                "source",
                [
                    (
                        ("format",),
                        f"cannot tell the format of {Path(self.path).name!r} from its extension; "
                        'set format = "json" or "csv"',
                    )
                ],
            )
        if self.layout is not None and self.file_format is not FileFormat.CSV:
            problems("source", [(("layout",), "only applies to CSV files")])
        return self


class ManualSettings(_Source):
    kind: Literal["manual"] = "manual"


class ReplaySettings(_Source):
    kind: Literal["replay"] = "replay"
    path: FilePath = Field(examples=['path = "recordings/bessemer.jsonl"'])
    speed: Positive = 1.0


KINDS = ("http_json", "http_csv", "file", "manual", "replay")


def _kind(value: object) -> object:
    """The ``kind`` first: without a known one, no other key can be checked."""
    if not isinstance(value, Mapping):
        raise bad(f"expected a table, got {describe(value)}")
    kind = value.get("kind")
    if kind is None:
        said = f"missing (one of {', '.join(KINDS)})"
    elif not isinstance(kind, str):
        said = f"expected text, got {describe(kind)}"
    elif kind not in KINDS:
        said = f"unknown kind {describe(kind)}{suggest(kind, KINDS)}; one of {', '.join(KINDS)}"
    else:
        return value
    problems("source", [(("kind",), said)])
    return value


SourceSettings = Annotated[
    HttpJsonSettings | HttpCsvSettings | FileSettings | ManualSettings | ReplaySettings,
    Field(discriminator="kind"),
    BeforeValidator(_kind),
]
"""A count's ``source`` table, by its ``kind``."""
