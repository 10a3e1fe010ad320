"""What the bot says can be typed back: every usage line and every ``list`` entry, shown as
each platform shows it (with the invisible characters that keep text from pinging or linking)
and copied into a command, is read as the words it shows."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest

from adapters.discord.text import escape as discord_escape
from adapters.slack.blocks import mrkdwn
from adapters.telegram.render import Run, finish
from bot.commands.args import Command
from bot.commands.builtin import VERBS
from bot.domain.subscription import Close, Hear, Wants
from bot.errors import CommandError
from tests.fakes.discord_fake.markdown import shown

ENTITY = re.compile(r"&(amp|lt|gt);")


def on_discord(text: str) -> str:
    """The characters a copy of a Discord message carries (zero-width spaces included)."""
    return shown(discord_escape(text)).text


def on_slack(text: str) -> str:
    """A copy of Slack mrkdwn: entities decoded, the zero-width spaces kept."""
    return ENTITY.sub(lambda m: {"amp": "&", "lt": "<", "gt": ">"}[m[1]], mrkdwn(text))


def on_telegram(text: str) -> str:
    """A copy of a Telegram message: the plain text, word joiners included."""
    return finish([Run(text)]).plain


PLATFORMS: dict[str, Callable[[str], str]] = {
    "discord": on_discord,
    "slack": on_slack,
    "telegram": on_telegram,
}


def example(usage: str) -> str:
    """A usage line filled in: ``<count>`` a count, ``[a|b]`` and ``a | b`` their first form,
    ``N`` a number."""
    words = []
    for word in usage.split(" | ")[0].replace("...", "").split():
        word = word.strip("[]").split("|")[0]
        word = {"<count>": "bessemer-2021", "count": "bessemer-2021", "title": "Local 7 vote"}.get(
            word, word
        )
        words.append(word.replace("=N%", "=10%").replace("=N", "=5").replace("=@role", "=@123"))
    return " ".join(w for w in words if w)


def outcome(line: str) -> Command | str:
    try:
        return VERBS.parse(line)
    except CommandError as exc:
        return f"error: {exc}"


def test_the_examples_are_commands() -> None:
    """The filled-in usage lines parse (so the test below compares commands, not errors)."""
    refused = {spec.name: outcome(example(spec.usage)) for spec in VERBS}
    assert [v for v, got in refused.items() if isinstance(got, str)] == []


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
@pytest.mark.parametrize("verb", [spec.name for spec in VERBS])
def test_every_usage_pasted_back_is_the_same_command(platform: str, verb: str) -> None:
    line = example(VERBS[verb].usage)
    copied = PLATFORMS[platform](line)
    assert outcome(copied) == outcome(line), copied


def test_the_help_pasted_back_keeps_its_examples() -> None:
    line = (
        "create local-7 choices=yes:Yes,no:No rule=threshold threshold=2/3 source=https://x.org/r"
    )
    for show in PLATFORMS.values():
        assert outcome(show(line)) == outcome(line)
    assert not isinstance(outcome(line), str)


SHAPES = [
    Wants(frozenset(hears), live, close, mention, thread, pin)
    for hears, live, close, mention, thread, pin in itertools.product(
        [{Hear.EVENTS}, {Hear.ALL}, {Hear.FINAL}, {Hear.CALLS, Hear.LEADS}],
        [False, True],
        [None, Close(votes=50), Close(tenths=25)],
        [None, "1175000000000000001", "S0123ABCD"],
        [False, True],
        [False, True],
    )
]


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_every_subscription_listed_is_subscribed_again_by_its_words(platform: str) -> None:
    show = PLATFORMS[platform]
    wrong = []
    for wants in SHAPES:
        line = f"subscribe bessemer-2021 {wants.grammar()}"
        again = outcome(show(line))
        if again != outcome(line) or isinstance(again, str):
            wrong.append((line, again))
    assert wrong == []
