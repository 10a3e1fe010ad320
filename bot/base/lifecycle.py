"""A base for objects used as ``async with`` that open and close one thing (httpx's shape).

``async with`` calls :meth:`Closing.aopen` and then :meth:`Closing.aclose`; both do nothing by
default, so a subclass with nothing to open or close (a file read on each fetch, manual entry)
writes neither, and one that holds a session, a file or an engine writes only those two.
"""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Opened by ``async with`` (:meth:`aopen`), closed when it ends (:meth:`aclose`)."""

    async def __aenter__(self) -> Self:
        await self.aopen()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aopen(self) -> None:
        """Open what this holds; the default has nothing to open."""

    async def aclose(self) -> None:
        """Close what :meth:`aopen` opened; the default has nothing to close. Safe to call on
        what failed to open, or was closed already."""
