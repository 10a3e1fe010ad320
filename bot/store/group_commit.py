"""Group commit: what many tasks ask the store to write at about the same time goes in one
transaction (the dispatcher's notes of attempts and its records of messages sent).

A caller hands in its item and awaits its own result. The first one starts a writer; whatever
comes while the writer's transaction is being written waits for the next, which takes them all.
So on a busy store (SQLite's one writer taken, dozens of direct messages answered at once) one
transaction carries many items, and on a quiet one each goes alone at once: nothing is held back
on a timer. A caller gets its result only once its transaction has committed, as if it had
written its item alone; an item that fails (``write`` gives its exception) fails alone, and a
transaction that fails fails each of its callers.
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

    async def _write_all(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                async with self.db.begin() as conn:
                    results = await self.write(conn, [item for item, _ in batch])
                self.transactions += 1
            except Exception as exc:  # the transaction failed: each of its callers does
                results = [exc] * len(batch)
            for (_, done), result in zip(batch, results, strict=True):
                if done.done():  # its caller was cancelled (shutting down)
                    continue
                if isinstance(result, Exception):
                    done.set_exception(result)
                else:
                    done.set_result(result)
