"""The typed settings pass (``bot.settings``): one check of the whole file, every problem at
once, one ``FILE: KEY: PROBLEM`` line each, in the order of the file."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bot.errors import ConfigError
from bot.ingest.sources.settings import HttpJsonSettings
from bot.settings.loader import parse

PATH = Path("typos.toml")
TYPOS = """
[defaults]
intervall = 30

[discord]
guild = [123]

[[counts]]
id = "board-2026"
titel = "Board election"
rule = "majoritty"
choices = [{ id = "ana" }, { id = "ben" }]

[counts.source]
kind = "http_json"
url = "https://example.org/f.json"
timout = 10
headers = { Authorization = "Bearer x" }

[counts.source.fields]
votes.ana = "a"
challanged = "c"

[[counts]]
id = "vote-2"
title = "Vote"
choices = [{ id = "yes" }, { id = "no" }]
source = { kind = "file", path = "f.json", layot = "rows" }

[server]
prot = 8080
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse(tomllib.loads(text), PATH)
    return [p.removeprefix(f"{PATH}: ") for p in caught.value.problems]


def test_every_problem_of_the_file_at_once_in_file_order() -> None:
    assert problems(TYPOS) == [
        "defaults.intervall: unknown key (did you mean 'interval'?)",
        "discord.guild: unknown key (did you mean 'guilds'?)",
        "counts[0].titel: unknown key (did you mean 'title'?)",
        "counts[0].rule: unknown rule \"majoritty\" (text) (did you mean 'majority'?); one of "
        "majority, plurality, threshold",
        "counts[0].source.timout: unknown key (did you mean 'timeout'?)",
        "counts[0].source.headers.Authorization: Authorization is a secret and does not belong "
        'in the config; use headers_from_env = { Authorization = "ENV_VAR_NAME" }',
        "counts[0].source.fields.challanged: unknown key (did you mean 'challenged'?)",
        "counts[0].title: missing",  # a missing key: at the end of its table
        "counts[1].source.layot: unknown key (did you mean 'layout'?)",
        "server.prot: unknown key (did you mean 'port'?)",
    ]


def test_checks_across_keys_come_once_the_keys_are_good() -> None:
    text = TYPOS.replace("intervall", "interval").replace("guild =", "guilds =")
    text = text.replace("titel", "title").replace("majoritty", "majority")
    text = text.replace("timout", "timeout").replace('Authorization = "Bearer x"', "")
    text = text.replace("challanged", "challenged").replace("layot", "layout")
    text = text.replace("prot", "port").replace("votes.ana", "votes.cho")
    assert problems(text) == [
        "counts[0].source.fields.votes: unknown choice 'cho'; count 'board-2026' has choices "
        "'ana', 'ben'",
        "counts[1].source.layout: only applies to CSV files",
    ]
    text = text.replace("votes.cho", "votes.ana").replace(', layout = "rows"', "")
    cfg = parse(tomllib.loads(text), PATH)
    assert isinstance(cfg.counts[0].source, HttpJsonSettings)
    assert cfg.counts[0].source.timeout == 10.0


def test_tables_and_lists_of_the_wrong_kind() -> None:
    assert problems('defaults = 3\ncounts = "x"\n[discord]\nguilds = 5\nadmin_users = {}\n') == [
        "defaults: expected a table, got 3 (an integer)",
        'counts: expected a list, got "x" (text)',
        "discord.guilds: expected a list, got 5 (an integer)",
        "discord.admin_users: expected a list, got a table",
    ]


def test_the_configuration_as_far_as_it_could_be_read() -> None:
    """check-config goes on to check the machine for what was good: a key with a problem is
    left at its default, a count with a problem is left out."""
    from bot.settings.problems import Problems

    found = Problems(PATH)
    cfg = parse(tomllib.loads(TYPOS), PATH, found)
    assert len(found.items) == 10
    assert cfg.settings("discord").guilds == ()
    assert cfg.counts == ()
    assert cfg.server is not None
    assert cfg.server.port == 8080


def test_a_count_is_private_unless_the_file_says_public() -> None:
    base = '[[counts]]\nid = "v"\ntitle = "V"\nchoices = [{ id = "a" }, { id = "b" }]\n'
    assert [c.public for c in parse(tomllib.loads(base), PATH).counts] == [False]
    assert [c.public for c in parse(tomllib.loads(base + "public = true\n"), PATH).counts] == [True]
    assert problems(base + 'public = "yes"\n') == [
        'counts[0].public: expected true/false, got "yes" (text)'
    ]
