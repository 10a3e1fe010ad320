"""Memory given back to the system once a burst of work (a fan-out) is over.

CPython frees most objects at once, but the C allocator (glibc's malloc) keeps the freed pages
of its arenas for later, so a process that peaked during a fan-out of thousands of messages
stays at its peak resident size for ever. ``give_back`` collects the garbage cycles left by the
burst (tasks, exceptions and their tracebacks) and asks glibc to return its free pages
(``malloc_trim(0)``). Elsewhere than glibc it only collects.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Callable

_trim: Callable[[int], int] | None = None
_libc = ctypes.util.find_library("c")
if _libc is not None:
    try:
        _trim = ctypes.CDLL(_libc).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        _trim = None


def give_back() -> None:
    """Collect garbage cycles and return the allocator's free pages to the system."""
    gc.collect()
    if _trim is not None:
        _trim(0)
