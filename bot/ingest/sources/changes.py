"""Telling "nothing new" apart: the same body as last time, or the same figures."""

from __future__ import annotations

import hashlib

from bot.domain.model import Tally


class ChangeFilter:
    """Remembers the last body and figures a source read successfully.

    Only successful reads are remembered, so a body that failed to parse is parsed (and fails)
    again next time instead of being waved through as "not modified".
    """

    def __init__(self) -> None:
        self._digest: bytes | None = None
        self._figures: tuple[object, ...] | None = None

    def same_body(self, data: bytes) -> bool:
        """Whether ``data`` is byte-identical to the last body read successfully."""
        return self._digest is not None and hashlib.sha256(data).digest() == self._digest

    def forget(self) -> None:
        """Forget the last body and figures: the next read is new whatever it holds."""
        self._digest = None
        self._figures = None

    def accept(self, data: bytes, tally: Tally) -> Tally | None:
        """Remember a successful read; the tally, or None when its figures did not change."""
        self._digest = hashlib.sha256(data).digest()
        figures = tally.figures()
        if figures == self._figures:
            return None
        self._figures = figures
        return tally
