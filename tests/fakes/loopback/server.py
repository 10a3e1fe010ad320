"""The loopback server every platform fake is: an aiohttp application on 127.0.0.1 and a free
port (0), started by ``async with`` and stopped at its end.

A fake gives its application (:meth:`LoopbackServer.application`: its routes and its body size
limit), closes what it holds open before the server stops (:meth:`stopping`: WebSocket sessions,
long polls) and says whether it hit a bug of its own (:meth:`check`, raised at exit unless the
test itself failed).
"""

from __future__ import annotations

from types import TracebackType
from typing import Self

from aiohttp import web


class LoopbackServer:
    shutdown_timeout = 1.0
    """Seconds aiohttp gives open requests at the end (a long poll is cut off after them)."""
    _runner: web.AppRunner | None = None
    _port: int | None = None

    def application(self) -> web.Application:
        """The fake's routes, with its limit on request bodies."""
        raise NotImplementedError

    async def stopping(self) -> None:
        """Before the server stops: close what the fake holds open (sockets, long polls)."""

    def check(self, exc: BaseException | None) -> None:
        """At exit: raise the fake's own bugs, if any (``exc``: the test's own error, if any)."""

    @property
    def port(self) -> int:
        """The port the fake listens on (0 until it runs)."""
        return self._port or 0

    async def __aenter__(self) -> Self:
        if self._runner is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        runner = web.AppRunner(
            self.application(), access_log=None, shutdown_timeout=self.shutdown_timeout
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", 0).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await self.stopping()
            await runner.cleanup()
        self.check(exc)
