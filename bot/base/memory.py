"""Memory given back to the system once a burst of work (a fan-out) is over.

CPython frees most objects at once, but the C allocator (glibc's malloc) keeps the freed pages
of its arenas for later, so a process that peaked during a fan-out of thousands of messages
stays at its peak resident size for ever. ``give_back`` collects the garbage cycles left by the
burst (tasks, exceptions and their tracebacks) and asks glibc to return its free pages
(``malloc_trim(0)``). Elsewhere than glibc it only collects.

What the bot made to start (the modules and libraries, the adapters' clients, the settings)
lives as long as the process: ``keep_start_up`` moves it out of the collector's reach once the
bot is up, so that every full collection, automatic or ``give_back``'s, walks only what was
made since, not the whole heap again. The price is bounded: a start-up object let go later in a
reference cycle (a gateway connection replaced after a reconnect) is never freed, so at most
what start-up made stays.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import os
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)
_trim: Callable[[int], int] | None = None
_libc = ctypes.util.find_library("c")
if _libc is not None:
    try:
        _trim = ctypes.CDLL(_libc).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        _trim = None


def resident_mb() -> float | None:
    """This process's resident memory (Linux's ``/proc/self/statm``), None elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def keep_start_up() -> int:
    """Collect what start-up left over, then freeze what is left (``gc.freeze``): never
    collected again, never walked by a collection. The objects frozen."""
    gc.collect()
    gc.freeze()
    kept = gc.get_freeze_count()
    log.info("start-up's %d objects kept out of the garbage collector's walks", kept)
    return kept


def give_back() -> tuple[float | None, float | None]:
    """Collect garbage cycles and return the allocator's free pages to the system; the
    resident memory before and after (MB)."""
    before = resident_mb()
    gc.collect()
    if _trim is not None:
        _trim(0)
    after = resident_mb()
    if before is not None and after is not None:
        log.info("memory given back after the deliveries: resident %.0f -> %.0f MB", before, after)
    return before, after
