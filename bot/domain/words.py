"""Small pieces of English shared by everything that words a figure: numbers, plurals, fractions.

Pure functions with no imports from the rest of the bot, so that the model, the detector and the
formatter can all use them.
"""

from __future__ import annotations

from fractions import Fraction

FRACTION_WORDS = {
    Fraction(1, 2): "half",
    Fraction(2, 3): "two-thirds",
    Fraction(3, 4): "three-quarters",
    Fraction(3, 5): "three-fifths",
    Fraction(4, 5): "four-fifths",
    Fraction(1): "all",
}


def n(value: int) -> str:
    """A figure with thousands separators.

    >>> n(1100), n(999), n(1_000_000_000_000)
    ('1,100', '999', '1,000,000,000,000')
    """
    return f"{value:,}"


def count_of(value: int, singular: str, plural: str | None = None) -> str:
    """A figure and its noun, singular with 1.

    >>> count_of(1, "ballot"), count_of(1652, "ballot"), count_of(0, "vote")
    ('1 ballot', '1,652 ballots', '0 votes')
    >>> count_of(1, "challenged ballot"), count_of(2, "delivery", "deliveries")
    ('1 challenged ballot', '2 deliveries')
    """
    return f"{n(value)} {noun(value, singular, plural)}"


def noun(value: int, singular: str, plural: str | None = None) -> str:
    """The noun that agrees with ``value``: ``noun(1, "ballot")`` is ``ballot``."""
    if value == 1:
        return singular
    return plural if plural is not None else singular + "s"


def fraction_words(value: Fraction) -> str:
    """A share as prose: two-thirds, three-quarters; a percentage or n/d otherwise.

    >>> fraction_words(Fraction(2, 3)), fraction_words(Fraction(3, 4))
    ('two-thirds', 'three-quarters')
    >>> fraction_words(Fraction(11, 20)), fraction_words(Fraction(5, 7))
    ('55%', '5/7')
    """
    if value in FRACTION_WORDS:
        return FRACTION_WORDS[value]
    percent = value * 100
    if percent.denominator == 1:
        return f"{percent.numerator}%"
    return f"{value.numerator}/{value.denominator}"
