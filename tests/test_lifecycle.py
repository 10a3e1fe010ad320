"""bot.base.lifecycle.Closing: ``async with`` opens with ``aopen`` and closes with ``aclose``."""

from __future__ import annotations

import pytest

from bot.base.lifecycle import Closing


class Held(Closing):
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def aopen(self) -> None:
        self.calls.append("open")

    async def aclose(self) -> None:
        self.calls.append("close")


async def test_the_defaults_open_and_close_nothing_and_give_the_object_itself() -> None:
    plain = Closing()
    async with plain as entered:
        assert entered is plain


async def test_async_with_opens_then_closes() -> None:
    held = Held()
    async with held as entered:
        assert entered is held
        assert held.calls == ["open"]
    assert held.calls == ["open", "close"]


async def test_it_closes_when_the_block_raises_and_the_error_goes_on() -> None:
    held = Held()
    with pytest.raises(KeyError):
        async with held:
            raise KeyError("boom")
    assert held.calls == ["open", "close"]
