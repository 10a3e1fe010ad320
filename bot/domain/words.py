"""Small pieces of English shared by everything that words a figure: numbers, plurals, fractions.

Pure functions with no imports from the rest of the bot, so that the model, the detector and the
formatter can all use them.
"""

from __future__ import annotations

from datetime import timedelta
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


def duration_words(length: timedelta) -> str:
    """A length of time in hours and minutes, rounded down to the minute.

    >>> duration_words(timedelta(hours=9, minutes=10)), duration_words(timedelta(minutes=1))
    ('9 hours 10 minutes', '1 minute')
    >>> duration_words(timedelta(hours=1)), duration_words(timedelta(seconds=59))
    ('1 hour', 'less than a minute')
    >>> duration_words(timedelta(days=2, hours=3))
    '51 hours'
    """
    minutes = int(length.total_seconds()) // 60
    if minutes == 0:
        return "less than a minute"
    hours, minutes = divmod(minutes, 60)
    parts = [count_of(hours, "hour")] if hours else []
    if minutes:
        parts.append(count_of(minutes, "minute"))
    return " ".join(parts)
