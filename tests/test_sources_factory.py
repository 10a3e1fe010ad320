"""Sources from a count's ``source`` table: every mistake in the table is found with the rest of
the file (:mod:`bot.ingest.sources.settings`), every one the machine makes when the source is
built (:mod:`bot.ingest.sources.factory`); each names where, the key and the problem."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest

from bot.domain.model import Choice, Count, DecisionRule, RuleKind, TallyState
from bot.errors import ConfigError
from bot.ingest.sources import settings as source_settings
from bot.ingest.sources.base import Source
from bot.ingest.sources.csv_doc import CsvLayout
from bot.ingest.sources.factory import build_source
from bot.ingest.sources.file import FileFormat, FileSource
from bot.ingest.sources.http_csv import HttpCsvSource
from bot.ingest.sources.http_json import HttpJsonSource
from bot.ingest.sources.manual import ManualSource
from bot.ingest.sources.mapping import FieldMap
from bot.ingest.sources.replay import ReplaySource
from bot.ingest.sources.settings import SourceSettings
from bot.settings.loader import parse
from bot.testing.clock import FakeClock

COUNT = Count(
    "bessemer-2021",
    "Amazon BHM1, Bessemer",
    (Choice("yes", "Yes (RWDSU)"), Choice("no", "No union")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)
TABLE = {
    "id": "bessemer-2021",
    "title": "Amazon BHM1, Bessemer",
    "choices": [{"id": "yes", "label": "Yes (RWDSU)"}, {"id": "no", "label": "No union"}],
    "tie_holder": "no",
    "status": "scheduled",
}
PATH = Path("config.toml")
WHERE = f"{PATH}: counts[0].source"
BASE = Path("/etc/tallybot")
ENV = {"FEED_TOKEN": "Bearer s3cret-4b9e1f7a"}


def settings(cfg: object) -> SourceSettings:
    """The ``source`` table checked as part of a file."""
    (count,) = parse({"counts": [{**TABLE, "source": cfg}]}, PATH).counts
    assert count.count == COUNT
    return count.source


def build(cfg: dict[str, object]) -> Source:
    # The paths under BASE do not exist: whether files exist is checked in its own test.
    return build_source(
        COUNT, settings(cfg), clock=FakeClock(), base_dir=BASE, where=WHERE, env=ENV,
        check_files=False,
    )  # fmt: skip


def error(cfg: object) -> str:
    with pytest.raises(ConfigError) as info:
        build(cfg)  # type: ignore[arg-type]
    message = "\n".join(info.value.problems)
    assert all(p.startswith(WHERE) for p in info.value.problems), message
    return message


JSON_CFG: dict[str, object] = {
    "kind": "http_json",
    "name": "nlrb-feed",
    "url": "https://example.org/bessemer.json",
    "fields": {
        "votes": {"yes": "results.0.count", "no": "results.1.count"},
        "void": "void",
        "state": "status",
    },
    "state_values": {"in progress": "counting", "recess": "paused", "certified": "final"},
    "timeout": 5,
    "max_bytes": 4096,
    "headers": {"Accept-Language": "en"},
    "headers_from_env": {"Authorization": "FEED_TOKEN"},
}


def test_an_http_json_source_gets_every_setting() -> None:
    source = build(JSON_CFG)
    assert isinstance(source, HttpJsonSource)
    assert source.name == "nlrb-feed"
    assert source.polled
    assert source.fields == FieldMap(
        votes={"yes": "results.0.count", "no": "results.1.count"}, void="void", state="status"
    )
    assert source.states.lookup("Recess") is TallyState.PAUSED
    options = source._http.options
    assert (options.url, options.timeout, options.max_bytes) == (
        "https://example.org/bessemer.json",
        5.0,
        4096,
    )
    assert options.headers == {"Accept-Language": "en", "Authorization": "Bearer s3cret-4b9e1f7a"}


def test_defaults_for_an_http_csv_source() -> None:
    source = build({"kind": "http_csv", "url": "https://docs.google.com/x/pub?output=csv"})
    assert isinstance(source, HttpCsvSource)
    assert source.name == "http-csv"
    assert source.layout is CsvLayout.ROWS
    assert source.fields == FieldMap({"yes": "yes", "no": "no"})
    assert (source._http.options.timeout, source._http.options.max_bytes) == (10.0, 1_048_576)


def test_partial_vote_mappings_default_the_rest_to_the_choice_id() -> None:
    source = build({**JSON_CFG, "fields": {"votes": {"no": "n"}}})
    assert isinstance(source, HttpJsonSource)
    assert dict(source.fields.votes) == {"yes": "yes", "no": "n"}


def test_file_paths_resolve_against_the_base_dir() -> None:
    relative = build({"kind": "file", "path": "feeds/count.csv", "layout": "pairs"})
    assert isinstance(relative, FileSource)
    assert relative.path == BASE / "feeds/count.csv"
    assert (relative.format, relative.layout) == (FileFormat.CSV, CsvLayout.PAIRS)
    absolute = build({"kind": "file", "path": "/srv/count.data", "format": "json"})
    assert isinstance(absolute, FileSource)
    assert (absolute.path, absolute.format) == (Path("/srv/count.data"), FileFormat.JSON)


def test_replay_and_manual() -> None:
    replay = build({"kind": "replay", "path": "rec/bessemer.jsonl", "speed": 60})
    assert isinstance(replay, ReplaySource)
    assert (replay.path, replay.speed, replay.name) == (BASE / "rec/bessemer.jsonl", 60.0, "replay")
    manual = build({"kind": "manual", "name": "admins"})
    assert isinstance(manual, ManualSource)
    assert (manual.name, manual.polled) == ("admins", False)


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({}, "counts[0].source.kind: missing (one of http_json, http_csv, file, manual, replay)"),
        (
            {"kind": "http_jsn"},
            "kind: unknown kind \"http_jsn\" (text) (did you mean 'http_json'?)",
        ),
        ({"kind": 3}, "kind: expected text, got 3 (an integer)"),
        (
            {"kind": "http_json", "url": "https://x/", "timout": 5},
            "source.timout: unknown key (did you mean 'timeout'?)",
        ),
        (
            {"kind": "manual", "url": "https://x/"},
            "source.url: unknown key; known keys: kind, name",
        ),
        ({"kind": "http_json"}, "source.url: missing (e.g. url = "),
        ({"kind": "http_csv", "url": "ftp://x/a.csv"}, "url: must be an http:// or https://"),
        ({"kind": "http_json", "url": "https://"}, "url: must be an http:// or https://"),
        ({"kind": "http_json", "url": " "}, "url: is empty"),
        ({**JSON_CFG, "timeout": 0}, "timeout: must be a number above 0, got 0 (an integer)"),
        ({**JSON_CFG, "timeout": "10"}, 'timeout: must be a number above 0, got "10" (text)'),
        ({**JSON_CFG, "timeout": True}, "timeout: must be a number above 0, got True"),
        ({**JSON_CFG, "timeout": float("inf")}, "timeout: must be a finite number"),
        ({**JSON_CFG, "max_bytes": 1.5}, "max_bytes: must be a whole number of at least 1"),
        (
            {**JSON_CFG, "state_values": {"certified": "done"}},
            "state_values.certified: bad state value 'done'; must be one of counting, paused",
        ),
        (
            {**JSON_CFG, "state_values": {"in progress": "countin"}},
            "state_values.\"in progress\": bad state value 'countin' (did you mean 'counting'?)",
        ),
        ({**JSON_CFG, "state_values": ["recess"]}, "state_values: expected a table, got"),
        (
            {**JSON_CFG, "fields": {"votes": {"yes": "a", "no": "b", "maybe": "c"}}},
            "fields.votes: unknown choice 'maybe'; count 'bessemer-2021' has choices 'yes', 'no'",
        ),
        (
            {**JSON_CFG, "fields": {"votes": {"yes": "a", "no": "b"}, "challanged": "c"}},
            "fields.challanged: unknown key (did you mean 'challenged'?)",
        ),
        (
            {**JSON_CFG, "fields": {"votes": {"yes": "results..count"}}},
            "fields.votes.yes: path 'results..count' has an empty step",
        ),
        ({**JSON_CFG, "fields": {"void": 3}}, "fields.void: expected text, got 3"),
        ({**JSON_CFG, "fields": {"votes": "yes"}}, "fields.votes: expected a table"),
        (
            {**JSON_CFG, "headers": {"Authorization": "Bearer x"}},
            "headers.Authorization: Authorization is a secret and does not belong in the config",
        ),
        (
            {**JSON_CFG, "headers_from_env": {"Authorization": "NOPE_TOKEN"}},
            "headers_from_env.Authorization: environment variable 'NOPE_TOKEN' is not set",
        ),
        (
            {**JSON_CFG, "headers_from_env": {"Authorization": "not a var"}},
            "'not a var' is not an environment variable name",
        ),
        ({**JSON_CFG, "headers": {"Bad Header": "x"}}, "'Bad Header' is not a valid header name"),
        ({"kind": "http_csv", "url": "https://x/", "layout": "columns"}, "layout: unknown layout"),
        ({"kind": "file"}, "source.path: missing"),
        ({"kind": "file", "path": "feed.txt"}, "format: cannot tell the format of 'feed.txt'"),
        ({"kind": "file", "path": "f.json", "layout": "rows"}, "layout: only applies to CSV"),
        ({"kind": "file", "path": "f.csv", "format": "xml"}, 'format: unknown format "xml"'),
        ({"kind": "replay", "path": "r.jsonl", "speed": 0}, "speed: must be a number above 0"),
        ({"kind": "replay", "path": "r.jsonl", "sped": 2}, "(did you mean 'speed'?)"),
        ({"kind": "manual", "name": ""}, "name: is empty"),
    ],
)
def test_config_mistakes_name_where_the_key_and_the_problem(
    cfg: dict[str, object], expected: str
) -> None:
    assert expected in error(cfg)


def test_a_source_table_that_is_not_a_table() -> None:
    assert error("http_json") == f'{WHERE}: expected a table, got "http_json" (text)'


def test_every_problem_of_a_source_table_at_once_in_file_order() -> None:
    cfg = {
        "kind": "http_json",
        "url": "ftp://x",
        "timout": 5,
        "fields": {"void": 3, "votes": {"maybe": "m"}},
        "max_bytes": 0,
    }
    assert error(cfg).splitlines() == [
        f'{WHERE}.url: must be an http:// or https:// address, got "ftp://x" (text)',
        f"{WHERE}.timout: unknown key (did you mean 'timeout'?)",
        f"{WHERE}.fields.void: expected text, got 3 (an integer)",
        f"{WHERE}.max_bytes: must be a whole number of at least 1, got 0 (an integer)",
    ]  # the unknown choice is found once the table is good: it needs the count's choices


def test_every_kind_and_key_is_documented_in_the_settings_docstring() -> None:
    doc = source_settings.__doc__ or ""
    union = typing.get_args(typing.get_args(SourceSettings)[0])
    kinds: dict[str, Any] = {m.model_fields["kind"].default: m for m in union}
    assert set(kinds) == set(source_settings.KINDS)
    for kind, model in kinds.items():
        assert f'kind = "{kind}"' in doc
        for key in model.model_fields:
            assert f"``{key}``" in doc, (kind, key)
