"""Group commit: what many tasks ask the store to write at about the same time goes in one
transaction (the dispatcher's notes of attempts and its records of messages sent).

A caller hands in its item and awaits its own result. The first one starts a writer; whatever
comes while the writer's transaction is being written waits for the next, which takes them all.
So on a busy store (SQLite's one writer taken, dozens of direct messages answered at once) one
transaction carries many items, and on a quiet one each goes alone at once: nothing is held back
on a timer. A caller gets its result only once its transaction has committed, as if it had
written its item alone; an item that fails (``write`` gives its exception) fails alone, and
when a transaction fails its items are written again one by one, so that only the one whose
write the store refuses fails (the others are written, as they would have been alone).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.db import Database

K = TypeVar("K")
R = TypeVar("R")


class GroupCommit(Generic[K, R]):
    """Items of type ``K`` written together by ``write`` (which gives, in their order, each
    item's result ``R`` or the exception it failed with)."""

    def __init__(
        self,
        db: Database,
        write: Callable[[AsyncConnection, list[K]], Awaitable[Sequence[R | Exception]]],
    ) -> None:
        self.db = db
        self.write = write
        self._waiting: list[tuple[K, asyncio.Future[R]]] = []
        self._writer: asyncio.Task[None] | None = None
        self.transactions = 0
        """How many transactions were written (for the benches)."""

    async def __call__(self, item: K) -> R:
        """Write ``item`` (with whatever else is waiting) and give its result once committed."""
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_all(), name="group commit")
        return await done

    async def aclose(self) -> None:
        """Wait for the transaction being written and those queued behind it: what callers
        handed in (a message sent, to be recorded) is written before the store closes, even when
        they were cancelled meanwhile; a writer left running would hold a connection the
        store's close cannot take back."""
        if self._writer is not None:
            await asyncio.gather(self._writer, return_exceptions=True)

    async def _write_all(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                results = await self._write([item for item, _ in batch])
            except BaseException:  # the writer cancelled: no caller may wait for ever
                for _, done in batch + self._waiting:
                    done.cancel()
                self._waiting = []
                raise
            for (_, done), result in zip(batch, results, strict=True):
                if done.done():  # its caller was cancelled (shutting down)
                    continue
                if isinstance(result, Exception):
                    done.set_exception(result)
                else:
                    done.set_result(result)

    async def _write(self, items: list[K]) -> Sequence[R | Exception]:
        """``items`` in one transaction; when it fails, each alone (so that the one whose write
        the store refuses fails alone)."""
        try:
            async with self.db.begin() as conn:
                results = await self.write(conn, items)
            self.transactions += 1
            return results
        except Exception as exc:
            if len(items) == 1:
                return [exc]
        return [(await self._write([item]))[0] for item in items]
