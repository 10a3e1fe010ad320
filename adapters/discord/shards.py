"""The gateway sessions of the shards this instance runs: one discord.py client each.

Which shards those are is :class:`bot.cluster.shards.ShardLeases`' answer (on PostgreSQL the
instances divide them through leases; on SQLite one instance runs them all). Each shard is a
``discord.Client(shard_id=N, shard_count=COUNT)`` of its own, discord.py's way of running one
shard of a bot whose other shards run elsewhere: it logs in, connects, identifies with
``shard: [N, COUNT]`` when :class:`bot.cluster.shards.SessionStarts` gives it its turn, and
reconnects (RESUME) by itself; stopping a shard closes its client, which ends its session for
good. A shard's first session waits for its turn before it connects: discord.py sends its first
heartbeat on the gateway's HELLO and reads nothing until it has identified, so a turn waited for
from ``before_identify_hook`` on a connected socket leaves the ACK unread that long ("Can't keep
up, shard ID N websocket is 10.5s behind") and, past a heartbeat interval, the connection given
up. (A new session after a reconnect, or one whose connection took longer than
``tree.FRESH_TURN_S`` after its turn, still waits in the hook.) ``came_up`` is
told when a shard's session is ready (its new holder marks it up at once). Delivery needs no
shard: it goes over REST from the adapter's own client, from any instance to any channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

from adapters.discord.delivery import FAILURES
from adapters.discord.lib import discord
from adapters.discord.tree import TallybotClient
from bot.platform import Health

log = logging.getLogger(__name__)

LOGIN_RETRY_S = 5.0
"""How long a shard waits before logging in again when Discord could not be reached."""
STOP_GRACE_S = 1.0
"""How long stopping a shard waits for its task to end after its client closed."""


def shard_of(guild_id: int, count: int) -> int:
    """The shard that carries a guild's events (Discord's rule)."""
    return (guild_id >> 22) % count


class GatewayShards:
    """The running shards, by number: each a client and the task that runs it."""

    def __init__(
        self,
        make: Callable[[int], TallybotClient],
        token: str,
        count: int,
        turn: Callable[[int], Awaitable[None]] | None = None,
    ) -> None:
        """``turn(shard)``: waits until the shard may start a session (None: at once)."""
        self._make = make
        self._token = token
        self.count = count
        self._turn = turn
        self.clients: dict[int, TallybotClient] = {}
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.came_up: Callable[[int], None] = lambda shard: None
        """Told the shard whose session is ready (again, after a new session)."""

    def client_of(self, guild_id: int) -> TallybotClient | None:
        """The client of the shard that carries ``guild_id``, when this instance runs it."""
        return self.clients.get(shard_of(guild_id, self.count))

    async def start(self, shard: int) -> None:
        """Start the shard's session (in the background: it logs in, waits for its turn to
        identify, connects)."""
        await self.stop(shard)
        client = self.clients[shard] = self._make(shard)
        client.came_up = self.came_up
        self.tasks[shard] = asyncio.create_task(self._run(client), name=f"discord-shard-{shard}")

    async def _run(self, client: TallybotClient) -> None:
        while not client.is_closed():
            try:
                await client.login(self._token)
                break
            except discord.LoginFailure:
                raise
            except FAILURES as exc:
                log.warning(
                    "shard %s cannot log in (%s): again in %g s",
                    client.shard_id,
                    exc,
                    LOGIN_RETRY_S,
                )
                await asyncio.sleep(LOGIN_RETRY_S)
        if self._turn is not None and not client.is_closed():
            await self._turn(client.shard_id or 0)  # before connecting (the module docstring)
            client.turn_taken = time.monotonic()
        if client.is_closed():  # stopped meanwhile (handed over before its session started)
            return
        await client.connect(reconnect=True)

    async def stop(self, shard: int) -> None:
        """End the shard's session, if it runs here."""
        await self.close(self.clients.pop(shard, None), self.tasks.pop(shard, None))

    def retire(self, shard: int) -> tuple[TallybotClient | None, asyncio.Task[None] | None]:
        """No longer count the shard's session as this instance's (it is handed over): its
        client and task, for :meth:`close` once its last commands are answered."""
        return self.clients.pop(shard, None), self.tasks.pop(shard, None)

    async def close(self, client: TallybotClient | None, task: asyncio.Task[None] | None) -> None:
        """End a session: close its client, then wait briefly for its task."""
        shard = client.shard_id if client is not None else None
        if client is not None:
            await client.close()
        if task is not None:
            done, _ = await asyncio.wait({task}, timeout=STOP_GRACE_S)
            if not done:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                try:
                    await task
                except Exception as exc:  # it failed before (health said so) or on closing
                    log.debug("shard %s ended with %r", shard, exc)

    async def stop_all(self) -> None:
        for shard in sorted(self.clients):
            await self.stop(shard)

    def up(self, shard: int) -> bool:
        """Whether the shard's session runs here and is connected and ready."""
        client = self.clients.get(shard)
        ws = client.ws if client is not None else None
        return client is not None and ws is not None and ws.open and client.is_ready()

    def health(self) -> Health:
        """Up while every shard run here is connected and ready (none: up, REST works)."""
        for shard, client in sorted(self.clients.items()):
            where = "the Discord gateway" if self.count == 1 else f"Discord shard {shard}"
            task = self.tasks[shard]
            if task.done() and not task.cancelled() and task.exception() is not None:
                return Health.down(f"{where} stopped: {task.exception()!r}")
            if client.is_closed():
                return Health.down(f"{where}: the client is closed")
            ws = client.ws
            if ws is None or not ws.open:
                return Health.down(f"{where} is disconnected (reconnecting)")
            if not client.is_ready():
                return Health.down(f"{where} is connected but not ready")
        return Health()
