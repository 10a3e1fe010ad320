"""Text measured as Slack and Telegram measure it: in UTF-16 code units.

Both platforms count a text's length in UTF-16 units, so a character outside the Basic
Multilingual Plane (most emoji) counts two, and a cut must never split one. Both measures run in
C (an encode of the text), not a Python step per character: a 3,000-unit label is cut in a few
encodes, not 3,000 steps.

>>> units("Yes 🗳")
6
>>> "Yes 🗳"[: fitting("Yes 🗳", 5)]   # the ballot box takes two units: it does not fit in 5
'Yes '
"""

from __future__ import annotations


def units(text: str) -> int:
    """Length in UTF-16 code units (a lone surrogate counts one).

    >>> units("abc"), units("😀"), units("\\ud800")
    (3, 2, 1)
    """
    # Two bytes a unit: in C, not a Python step per character.
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def fitting(text: str, room: int) -> int:
    """How many characters of ``text``, from its start, fit in ``room`` UTF-16 units: the
    longest prefix ``text[:n]`` with ``units(text[:n]) <= room`` (0 when ``room <= 0``).

    >>> fitting("abcdef", 4), fitting("ab", 9), fitting("abc", 0)
    (4, 2, 0)
    >>> fitting("a😀b", 2), fitting("a😀b", 3), fitting("😀😀😀", 5)
    (1, 2, 2)
    """
    if room <= 0:
        return 0
    # Each character is one unit or two: the first ``room`` characters hold at least ``room``
    # units. Drop characters from the end until they fit, half the excess (rounded up) at a
    # time: that drops too many only when every one dropped took two units and the room left
    # is one unit, which the next character (two units) would not fit anyway.
    n = min(len(text), room)
    used = units(text[:n])
    while used > room:
        drop = (used - room + 1) // 2
        used -= units(text[n - drop : n])
        n -= drop
    return n
