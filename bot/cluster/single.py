"""SQLite serves one instance: a lock on a file beside the store, released when the process
ends however it ends (``flock``: the kernel drops it with the last descriptor)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from sqlalchemy import make_url

from bot.base.lifecycle import Closing
from bot.errors import StoreError


def lock_path(store_url: str) -> Path | None:
    """The lock file of a SQLite file store (``FILE.lock``); None for PostgreSQL or memory."""
    url = make_url(store_url)
    name = url.database
    if url.get_backend_name() != "sqlite" or not name or name == ":memory:":
        return None
    if name.startswith("file:"):
        name = name[len("file:") :].split("?", 1)[0]
        if not name or name == ":memory:":
            return None
    return Path(name).expanduser().with_name(Path(name).name + ".lock")


class SingleInstance(Closing):
    """Held while this instance runs on the SQLite store at ``path``'s side; opening it while
    another process holds it is a :class:`StoreError` naming that instance."""

    def __init__(self, path: Path, instance_id: str) -> None:
        self.path = path
        self.instance_id = instance_id
        self._fd: int | None = None

    async def aopen(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            store = self.path.with_name(self.path.name.removesuffix(".lock"))
            raise StoreError(
                f"another tallybot instance ({holder}) is running on the SQLite store {store}: "
                "SQLite serves one instance at a time; stop that one, or move the store to "
                "PostgreSQL to run several"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{self.instance_id}\n".encode())
        self._fd = fd

    async def aclose(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # releases the lock
