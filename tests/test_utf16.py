"""UTF-16 measures (``bot.domain.utf16``): the fast cut against a step per character, on every
short text over an alphabet with every kind of character, and the cuts Slack and Telegram make
with it on a long label."""

from __future__ import annotations

import doctest
import itertools

import bot.domain.utf16
from adapters.slack.blocks import ELLIPSIS, clip
from adapters.telegram.render import ELLIPSIS as TELEGRAM_ELLIPSIS
from adapters.telegram.render import Run, finish
from bot.domain.utf16 import fitting, units

ALPHABET = ("a", "😀", "\ud800", "\udc00", "é")
"""One unit, two units (astral), a lone high and a lone low surrogate, one unit beyond ASCII."""


def stepwise(text: str, room: int) -> int:
    """The longest prefix within ``room`` units, one character at a time (the old loops)."""
    used = n = 0
    for ch in text:
        step = 2 if ord(ch) > 0xFFFF else 1
        if used + step > room:
            break
        used += step
        n += 1
    return n


def test_the_examples_hold() -> None:
    result = doctest.testmod(bot.domain.utf16)
    assert result.failed == 0
    assert result.attempted >= 5


def test_fitting_is_the_longest_prefix_within_room_on_every_short_text() -> None:
    checked = 0
    for length in range(7):
        for chars in itertools.product(ALPHABET, repeat=length):
            text = "".join(chars)
            assert units(text) == sum(2 if ord(c) > 0xFFFF else 1 for c in text), repr(text)
            for room in range(-1, 2 * length + 2):
                assert fitting(text, room) == stepwise(text, room), (repr(text), room)
                checked += 1
    assert checked > 100_000


def test_long_labels_are_cut_where_the_steps_would_cut_them_on_slack_and_telegram() -> None:
    label = "Vote 😀 " * 1_000  # 8,000 units
    cut = clip(label, 3_000)
    assert units(cut) == 3_000
    assert cut == label[: stepwise(label, 2_999)] + ELLIPSIS
    plain = finish([Run(label)], 4_096).plain
    assert plain == label[: stepwise(label, 4_095)].rstrip() + TELEGRAM_ELLIPSIS
    assert units(plain) <= 4_096
