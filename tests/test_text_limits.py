"""One set of limits on a count's text, checked wherever text enters (issue 27 part 1): the
domain, the config, chat, the push API and a subscription's words; over a limit is a one-line
error naming the field and the limit, and what the store kept from before is cut to them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.commands.builtin import VERBS
from bot.domain.limits import (
    MAX_CHOICES,
    MAX_LABEL,
    MAX_SOURCE_NAME,
    MAX_TITLE,
    MAX_WANTS,
)
from bot.domain.model import Choice, Count, DecisionRule, RuleKind
from bot.errors import CommandError, ConfigError, RequestError
from bot.ops.owners import read_new_count
from bot.settings.loader import parse as parse_config
from bot.store import counts as count_rows
from bot.store.schema import counts as counts_table
from bot.testing.clock import FakeClock
from tests.runtime.test_count_verbs import app_for, ask
from tests.runtime.test_count_verbs import config as app_config

YES_NO = (Choice("yes", "Yes"), Choice("no", "No"))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def count(title: str = "Bessemer", choices: tuple[Choice, ...] = YES_NO) -> Count:
    return Count("bessemer-2021", title, choices, DecisionRule(RuleKind.MAJORITY))


def test_a_count_at_the_limits_is_made_and_one_past_them_is_refused() -> None:
    most = tuple(Choice(f"c{i}", "L" * MAX_LABEL) for i in range(MAX_CHOICES))
    assert count("T" * MAX_TITLE, most).title == "T" * MAX_TITLE
    with pytest.raises(ConfigError, match=r"the title is 121 characters long: at most 120$"):
        count("T" * (MAX_TITLE + 1))
    with pytest.raises(ConfigError, match="label of choice 'yes' is 2,001 characters long: at"):
        count(choices=(Choice("yes", "Y" * 2001), Choice("no", "No")))
    with pytest.raises(ConfigError, match=rf"at most {MAX_CHOICES} choices, got 21$"):
        count(choices=(*most, Choice("one-more", "One more")))
    with pytest.raises(ConfigError, match=r"choice id 'yyyy.*at most 32$") as e:
        count(choices=(Choice("y" * 4000, "Yes"), Choice("no", "No")))
    assert len(str(e.value)) < 200  # the 4,000 characters are not repeated


def file_count(**table: Any) -> dict[str, Any]:
    return {
        "id": "bessemer-2021",
        "title": "Bessemer",
        "choices": [{"id": "yes"}, {"id": "no"}],
        **table,
    }


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"title": "T" * 4000}, "the title is 4,000 characters long: at most 120"),
        (
            {"choices": [{"id": "yes", "label": "Y" * 2001}, {"id": "no"}]},
            "the label of choice 'yes' is 2,001 characters long: at most 100",
        ),
        (
            {"choices": [{"id": f"c{i}"} for i in range(40)]},
            "a count has at most 20 choices, got 40",
        ),
        (
            {"source": {"kind": "manual", "name": "s" * 65}},
            "counts[0].source.name: the name is 65 characters long: at most 64",
        ),
    ],
)
def test_the_config_names_the_field_and_the_limit(
    tmp_path: Path, table: dict[str, Any], words: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)):
        parse_config({"counts": [file_count(**table)]}, tmp_path / "tallybot.toml")
    at_most = {"kind": "manual", "name": "s" * MAX_SOURCE_NAME}
    parse_config({"counts": [file_count(source=at_most)]}, tmp_path / "tallybot.toml")


def test_the_push_api_refuses_a_count_past_the_limits_with_a_422() -> None:
    body = {"id": "local-9", "title": "Local 9", "choices": [{"id": "yes"}, {"id": "no"}]}
    assert read_new_count(json.dumps(body).encode(), "slack:T0B").title == "Local 9"
    long_label = {**body, "choices": [{"id": "yes", "label": "Y" * 2001}, {"id": "no"}]}
    with pytest.raises(RequestError, match="label of choice 'yes' is 2,001 characters") as e:
        read_new_count(json.dumps(long_label).encode(), "slack:T0B")
    assert e.value.status == 422
    with pytest.raises(RequestError, match="the title is 4,000 characters long: at most 120"):
        read_new_count(json.dumps({**body, "title": "T" * 4000}).encode(), "slack:T0B")


async def test_chat_refuses_a_long_title_or_label_in_one_line(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(app_config(tmp_path), clock) as app:
        titled = await ask(app, "create long-1 " + "T" * 500 + " choices=yes:Yes,no:No")
        labelled = await ask(app, "create long-2 Vote choices=yes:" + "Y" * 2001 + ",no:No")
        made = await ask(app, "create long-3 Vote choices=yes:Yes,no:No")
        edited = await ask(app, "edit long-3 title=" + "T" * 121)
        async with app.db.connect() as conn:
            kept = await count_rows.get(conn, "long-3")
    assert titled.text == "Error: the title is 500 characters long: at most 120"
    assert labelled.text == "Error: the label of choice 'yes' is 2,001 characters long: at most 100"
    assert made.ok, made.text
    assert edited.text == "Error: the title is 121 characters long: at most 120"
    assert kept is not None
    assert kept.title == "Vote"


def test_a_subscriptions_words_have_a_limit() -> None:
    assert VERBS.parse("subscribe x mention=@" + "m" * (MAX_WANTS - 9)) is not None
    with pytest.raises(
        CommandError, match=r"the list of options is 5,\d+ characters long: at most 200"
    ):
        VERBS.parse("subscribe x mention=@" + "m" * 5000)


async def test_a_title_stored_before_the_limits_is_cut_when_read(
    tmp_path: Path, clock: FakeClock
) -> None:
    async with app_for(app_config(tmp_path), clock) as app, app.db.connect() as conn:
        await conn.execute(
            counts_table.update()
            .where(counts_table.c.id == "bessemer-2021")
            .values(title="T" * 4000, choices=json.dumps([["yes", "Y" * 2001], ["no", "No"]]))
        )
        await conn.commit()
        old = await count_rows.get(conn, "bessemer-2021")
    assert old is not None
    assert old.title == "T" * (MAX_TITLE - 1) + "…"
    assert old.label("yes") == "Y" * (MAX_LABEL - 1) + "…"
