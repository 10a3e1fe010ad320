"""``bot.base.memory``: what start-up made is kept out of the collector's walks, what it left
over is collected first; what a fan-out left is given back."""

from __future__ import annotations

import gc
import weakref

from bot.base.memory import give_back, keep_start_up


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def walked(obj: object) -> bool:
    """Whether a full collection looks at ``obj`` (frozen objects are in no generation)."""
    return any(o is obj for o in gc.get_objects())


def test_start_up_is_frozen_and_its_garbage_collected_first() -> None:
    kept = Node()
    left_over = Node()
    left_over.other = Node()
    left_over.other.other = left_over  # a cycle: only a collection frees it
    gone = weakref.ref(left_over)
    del left_over
    assert walked(kept)
    before = gc.get_freeze_count()
    assert keep_start_up() == gc.get_freeze_count() > before
    assert gone() is None  # collected, not frozen for ever
    assert not walked(kept)
    made_after = Node()
    assert walked(made_after)  # what comes later is collected as before


def test_give_back_collects_a_fan_outs_cycles() -> None:
    burst = Node()
    burst.other = Node()
    burst.other.other = burst
    gone = weakref.ref(burst)
    del burst
    give_back()
    assert gone() is None
