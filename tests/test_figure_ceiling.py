"""One ceiling for figures, checked wherever a figure enters: commands, pushes, sources, config.

Issue 11 section 7 and issue 12 "Input": a figure too big for the store, or for Python's own
int parsing (4,301 digits and more), is a clear one-line error, never a 500, an OverflowError or
a ValueError on every poll.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.commands.builtin import VERBS
from bot.domain.model import MAX_FIGURE, Choice, Count, DecisionRule, RuleKind, figure_value
from bot.errors import CommandError, ConfigError, PermanentSourceError, RequestError
from bot.ingest.push_body import read_push
from bot.ingest.sources.csv_doc import CsvLayout, parse_csv, tally_from_csv
from bot.ingest.sources.json_doc import parse_json, tally_from_json
from bot.ingest.sources.mapping import FieldMap, Found, StateValues, parse_figure
from bot.ops.push_client import figures_body
from bot.settings.loader import parse as parse_config
from bot.testing.clock import FakeClock

HUGE = "1" * 4301  # one digit past Python's default limit for int(str)
COUNT = Count(
    "bessemer-2021",
    "Bessemer",
    (Choice("yes", "Yes"), Choice("no", "No")),
    DecisionRule(RuleKind.MAJORITY, tie_holder="no"),
)


def test_the_ceiling_is_far_below_a_bigint() -> None:
    assert MAX_FIGURE == 10**12
    assert MAX_FIGURE * 1000 < 2**63 - 1  # a thousand figures at the ceiling still add up
    assert figure_value("1000000000000") == MAX_FIGURE
    assert figure_value("0001000000000000") == MAX_FIGURE  # leading zeros are not digits of size
    assert figure_value("1000000000001") is None
    assert figure_value(HUGE) is None
    assert figure_value("0" * 5000) == 0


@pytest.mark.parametrize("text", [f"update x yes={HUGE}", "update x received=" + "9" * 20])
def test_the_command_grammar_refuses_oversized_figures(text: str) -> None:
    with pytest.raises(CommandError, match="too large: figures are at most 1,000,000,000,000"):
        VERBS.parse(text)


def test_the_slack_adapter_can_tell_an_oversized_admin_command_without_crashing() -> None:
    assert VERBS.needs_admin(f"update x yes={HUGE}") is False  # not a command: the reply says why


@pytest.mark.parametrize(
    "value",
    [HUGE, 10**20, MAX_FIGURE + 1, str(MAX_FIGURE + 1), "9" * 40],
)
def test_a_source_figure_above_the_ceiling_is_a_source_error(value: object) -> None:
    with pytest.raises(PermanentSourceError, match="above the ceiling of 1,000,000,000,000") as e:
        parse_figure("votes.yes", Found(value, "JSON path 'yes'"), thousands=False)
    assert len(str(e.value)) < 300  # the 4,301 digits are not repeated whole


def test_a_source_figure_at_the_ceiling_is_read() -> None:
    found = Found(str(MAX_FIGURE), "x")
    assert parse_figure("votes.yes", found, thousands=False) == MAX_FIGURE
    found = Found("1,000,000,000,000", "x")
    assert parse_figure("votes.yes", found, thousands=True) == MAX_FIGURE


def test_a_source_figure_in_other_digits_is_not_a_number() -> None:
    with pytest.raises(PermanentSourceError, match="is not a whole number"):
        parse_figure("votes.yes", Found("٤٨٠", "x"), thousands=True)


def test_a_csv_cell_of_4301_digits_is_a_source_error() -> None:
    records = parse_csv(f"yes,no\n{HUGE},1\n".encode(), "sheet.csv")
    with pytest.raises(PermanentSourceError, match="above the ceiling"):
        tally_from_csv(
            records,
            CsvLayout.ROWS,
            COUNT,
            FieldMap.default(COUNT),
            StateValues(),
            clock=FakeClock(),
            source="sheet",
            label="sheet.csv",
        )


def test_a_json_number_of_4301_digits_is_a_clear_source_error() -> None:
    with pytest.raises(PermanentSourceError) as e:
        parse_json(f'{{"yes": {HUGE}, "no": 1}}'.encode(), "feed.json")
    assert "a number of 4,301 digits" in str(e.value)
    assert "set_int_max_str_digits" not in str(e.value)
    doc = parse_json(b'{"yes": 100000000000000000000, "no": 1}', "feed.json")
    with pytest.raises(PermanentSourceError, match="above the ceiling"):
        tally_from_json(
            doc,
            COUNT,
            FieldMap.default(COUNT),
            StateValues(),
            clock=FakeClock(),
            source="feed",
            label="feed.json",
        )


@pytest.mark.parametrize(
    "body",
    [
        f'{{"votes": {{"yes": "{HUGE}", "no": 1}}}}',
        '{"votes": {"yes": 1, "no": 1}, "received": 100000000000000000000}',
        f'{{"votes": {{"yes": 1, "no": {HUGE}}}}}',
    ],
)
def test_a_push_with_an_oversized_figure_is_a_4xx(body: str) -> None:
    with pytest.raises(RequestError) as e:
        read_push(body.encode(), COUNT, clock=FakeClock())
    assert e.value.status in (400, 422)
    assert len(str(e.value)) < 300


def test_the_push_client_refuses_an_oversized_figure() -> None:
    with pytest.raises(ConfigError, match="too large"):
        figures_body([f"yes={HUGE}"])


def config(tmp_path: Path, **count: Any) -> None:
    parse_config(
        {
            "counts": [
                {
                    "id": "bessemer-2021",
                    "title": "Bessemer",
                    "choices": [{"id": "yes"}, {"id": "no"}],
                    **count,
                }
            ]
        },
        tmp_path / "tallybot.toml",
    )


@pytest.mark.parametrize(
    ("count", "words"),
    [
        ({"eligible": 10**13}, "counts[0].eligible: 10,000,000,000,000 is above the ceiling"),
        ({"received": 10**18}, "counts[0].received: 1,000,000,000,000,000,000 is above the"),
        (
            {"eligible": 5876, "received": 5877},
            "counts[0].received: 5,877 received is more than the 5,876 eligible",
        ),
    ],
)
def test_the_config_refuses_oversized_figures_and_received_above_eligible(
    tmp_path: Path, count: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)):
        config(tmp_path, **count)
    config(tmp_path, eligible=MAX_FIGURE, received=MAX_FIGURE)
